import { createHash } from 'node:crypto';
import rateLimit from '@fastify/rate-limit';
import { DomainError } from '@quest/domain';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Redis } from 'ioredis';
import type { ApiConfig } from './env.ts';
import { rateLimited } from './metrics.ts';

/**
 * Rate limits, counted in Redis so every API process shares them (each counter is one key, so a
 * Redis cluster works too); in process memory when no Redis is given (tests of single routes).
 *
 * - per client address, on every route (public ones included), with @fastify/rate-limit;
 * - per API key, on the routes that take one, with @fastify/rate-limit;
 * - per owner, in allocation items (a batch of n items counts n): @fastify/rate-limit adds 1 per
 *   request and cannot weigh one, so this is `OwnerItemLimit`, a small atomic Redis script;
 * - failed authentications per client address (each unknown key costs a database lookup):
 *   counted when a request is answered INVALID_API_KEY, checked before the next one is served.
 *
 * Exceeding any: 429 RATE_LIMITED with Retry-After and the x-ratelimit-* headers.
 */

/** Fixed-window counter: add `weight`, start the window on the first hit; answers [count, ms left]. */
const WEIGHTED_INCR = `
local count = redis.call('INCRBY', KEYS[1], ARGV[1])
if count == tonumber(ARGV[1]) then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) ttl = tonumber(ARGV[2]) end
return {count, ttl}`;

type CountingRedis = Redis & { weightedIncr(key: string, weight: number, windowMs: number): Promise<[number, number]> };

/** A weighted fixed-window counter, in Redis or (without one) in this process. */
export class WindowCounter {
  readonly #redis: CountingRedis | undefined;
  readonly #local = new Map<string, { count: number; resetAt: number }>();
  constructor(
    redis: Redis | undefined,
    readonly windowMs: number,
  ) {
    if (redis && !('weightedIncr' in redis)) redis.defineCommand('weightedIncr', { numberOfKeys: 1, lua: WEIGHTED_INCR });
    this.#redis = redis as CountingRedis | undefined;
  }

  /** Add `weight` (0 reads) to `key`; the count so far in this window and the ms until it resets. */
  async add(key: string, weight: number): Promise<{ count: number; resetMs: number }> {
    if (this.#redis) {
      const [count, resetMs] = await this.#redis.weightedIncr(key, weight, this.windowMs);
      return { count, resetMs };
    }
    const now = Date.now();
    let entry = this.#local.get(key);
    if (!entry || entry.resetAt <= now) {
      if (this.#local.size > 100_000) this.#local.clear();
      entry = { count: 0, resetAt: now + this.windowMs };
      this.#local.set(key, entry);
    }
    entry.count += weight;
    return { count: entry.count, resetMs: entry.resetAt - now };
  }
}

function refuse(reply: FastifyReply, max: number, resetMs: number, scope: string): never {
  rateLimited.inc({ scope });
  const seconds = Math.max(1, Math.ceil(resetMs / 1000));
  reply.header('x-ratelimit-limit', max).header('x-ratelimit-remaining', 0).header('x-ratelimit-reset', seconds);
  reply.header('retry-after', seconds);
  throw new DomainError('RATE_LIMITED', `Rate limit exceeded; retry in ${seconds} s.`);
}

/** Allocation items per owner per window (a batch counts its items). */
export class OwnerItemLimit {
  constructor(
    readonly counter: WindowCounter,
    readonly max: number,
    readonly prefix: string,
  ) {}

  /** Count `items` for `ownerId`; 429 RATE_LIMITED when the window's budget is exceeded. */
  async charge(reply: FastifyReply, ownerId: string, items: number): Promise<void> {
    let state: { count: number; resetMs: number };
    try {
      state = await this.counter.add(`${this.prefix}:rl:owner:${ownerId}`, items);
    } catch {
      return; // the limiter's Redis being unreachable does not refuse requests (the queue decides)
    }
    if (state.count > this.max) refuse(reply, this.max, state.resetMs, 'owner_items');
  }
}

const hashKey = (key: string) => createHash('sha256').update(key).digest('base64url').slice(0, 22);

/** Register the per-address, per-key and failed-authentication limits on `app` (before the routes). */
export async function registerRateLimits(
  app: FastifyInstance,
  config: ApiConfig,
  redis: Redis | undefined,
): Promise<WindowCounter> {
  const windowMs = config.RATE_LIMIT_WINDOW_MS;
  const prefix = config.QUEUE_PREFIX;
  await app.register(rateLimit, {
    global: true,
    max: config.RATE_LIMIT_ADDRESS_MAX,
    timeWindow: windowMs,
    ...(redis ? { redis } : {}),
    nameSpace: `${prefix}:rl:`,
    // The limiter's Redis being unreachable does not refuse requests.
    skipOnError: true,
    keyGenerator: (request: FastifyRequest) => `ip:${request.ip}`,
    // Liveness is never limited (a flood must not get the process restarted); it documents no 429.
    allowList: (request: FastifyRequest) => request.url === '/healthz',
    errorResponseBuilder: (_request, context) => {
      rateLimited.inc({ scope: 'address' });
      return new DomainError('RATE_LIMITED', `Rate limit exceeded; retry in ${Math.max(1, Math.ceil(context.ttl / 1000))} s.`);
    },
  });

  // Per API key, on every route that takes one, in addition to the per-address limit.
  const keyLimit = new WindowCounter(redis, windowMs);
  const failures = new WindowCounter(redis, windowMs);
  app.addHook('onRequest', async (request, reply) => {
    const apiKey = request.headers['x-api-key'];
    if (typeof apiKey !== 'string' || apiKey === '') return;
    let failed: { count: number; resetMs: number };
    let used: { count: number; resetMs: number };
    try {
      [failed, used] = await Promise.all([
        failures.add(`${prefix}:rl:authfail:${request.ip}`, 0),
        keyLimit.add(`${prefix}:rl:key:${hashKey(apiKey)}`, 1),
      ]);
    } catch {
      return;
    }
    if (failed.count >= config.RATE_LIMIT_AUTH_FAILURES_MAX)
      refuse(reply, config.RATE_LIMIT_AUTH_FAILURES_MAX, failed.resetMs, 'auth_failures');
    if (used.count > config.RATE_LIMIT_KEY_MAX) refuse(reply, config.RATE_LIMIT_KEY_MAX, used.resetMs, 'key');
  });
  app.addHook('onSend', async (request, reply, payload) => {
    if (reply.statusCode === 401 && typeof payload === 'string' && payload.includes('"INVALID_API_KEY"')) {
      await failures.add(`${prefix}:rl:authfail:${request.ip}`, 1).catch(() => undefined);
    }
    return payload;
  });
  return new WindowCounter(redis, windowMs);
}
