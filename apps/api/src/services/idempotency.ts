import { readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { DomainError } from '@quest/domain';
import type { Redis } from 'ioredis';

/**
 * Refuses a reused Idempotency-Key with a different body at once, also while the first request is
 * still pending (its outcome is not in PostgreSQL yet, so the ledger cannot tell). One Redis key
 * per command (the derived request key, `alc_k…` or `bat_k…`) holds the digest of the body it was
 * first sent with: `SET key digest NX PX ttl`, and on an existing key the stored digest is
 * compared, in one round trip (a single-key script, so it also works on a Redis cluster). Requests
 * without an Idempotency-Key never reach it; nothing is written to the database.
 */

/** SET NX of the first digest, else compare (idempotency-claim.lua). */
const CLAIM = readFileSync(new URL('./idempotency-claim.lua', import.meta.url), 'utf8');

type ClaimingRedis = Redis & { idempotencyClaim(key: string, digest: string, ttlMs: number): Promise<number> };

export interface IdempotencyGuardOptions {
  /** Prefix of the Redis keys (the deployment's QUEUE_PREFIX). */
  prefix: string;
  /** How long a key's first body is remembered. */
  ttlMs: number;
}

export class IdempotencyGuard {
  readonly #redis: ClaimingRedis;
  constructor(
    redis: Redis,
    readonly options: IdempotencyGuardOptions,
  ) {
    redis.defineCommand('idempotencyClaim', { numberOfKeys: 1, lua: CLAIM });
    this.#redis = redis as ClaimingRedis;
  }

  /** SHA-256 of a request body's meaningful fields, in a canonical form. */
  static digest(parts: readonly (string | number)[]): string {
    return createHash('sha256').update(parts.join('\u0000')).digest('base64url');
  }

  /**
   * Proceed when `requestKey` is new or was first used with the same `digest`; else throw
   * IDEMPOTENCY_KEY_REUSED. Redis being unreachable is QUEUE_UNAVAILABLE (503, retry): the queue
   * lives on the same Redis.
   */
  async claim(requestKey: string, digest: string): Promise<void> {
    let same: number;
    try {
      same = await this.#redis.idempotencyClaim(`${this.options.prefix}:idem:${requestKey}`, digest, this.options.ttlMs);
    } catch (error) {
      throw new DomainError('QUEUE_UNAVAILABLE', undefined, undefined, error);
    }
    if (same !== 1) throw new DomainError('IDEMPOTENCY_KEY_REUSED');
  }
}
