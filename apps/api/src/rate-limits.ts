import { createHash } from 'node:crypto';
import rateLimit from '@fastify/rate-limit';
import { DomainError } from '@quest/domain';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Redis } from 'ioredis';
import type { ApiConfig } from './env.ts';
import { type BudgetStore, LeasedBudget, memoryBudgetStore, redisBudgetStore, type Spend, WindowTally } from './rate-budget.ts';
import { rateLimited } from './metrics.ts';

/**
 * Rate limits, shared by every API process through Redis (each counter is one key, so a Redis
 * cluster works too; in process memory when no Redis is given, for tests of single routes). Each
 * budget is spent from blocks leased from Redis (rate-budget.ts), so a request costs no Redis
 * round trip unless its process's block is spent:
 *
 * - per client address, on every route (public ones included): @fastify/rate-limit, with a store
 *   that spends leased blocks;
 * - per API key, on the routes that take one;
 * - per owner, in allocation items (a batch of n items counts n; @fastify/rate-limit adds 1 per
 *   request and cannot weigh one): `OwnerItemLimit`;
 * - failed authentications per client address (each unknown key costs a database lookup):
 *   counted when a request is answered INVALID_API_KEY, checked before a keyed request is served
 *   (other processes' failures are seen within a second).
 *
 * A refused request spends nothing. Exceeding any: 429 RATE_LIMITED with Retry-After and the
 * x-ratelimit-* headers. RATE_LIMITS_ENABLED=false turns them all off (behind a gateway that
 * limits clients itself).
 */

/** Where a refusal's headers go: a reply, or whatever an entry point answers through. */
export interface HeaderSink {
  header(name: string, value: string | number): unknown;
}

function refuse(reply: HeaderSink, max: number, resetMs: number, scope: string): never {
  rateLimited.inc({ scope });
  const seconds = Math.max(1, Math.ceil(resetMs / 1000));
  reply.header('x-ratelimit-limit', max);
  reply.header('x-ratelimit-remaining', 0);
  reply.header('x-ratelimit-reset', seconds);
  reply.header('retry-after', seconds);
  throw new DomainError('RATE_LIMITED', `Rate limit exceeded; retry in ${seconds} s.`);
}

/** Allocation items per owner per window (a batch counts its items). */
export class OwnerItemLimit {
  constructor(
    readonly budget: LeasedBudget | undefined,
    readonly prefix: string,
  ) {}

  /** Count `items` for `ownerId`; 429 RATE_LIMITED when the window's budget would be exceeded. */
  async charge(reply: HeaderSink, ownerId: string, items: number): Promise<void> {
    if (!this.budget) return;
    let spent: Spend;
    try {
      spent = await this.budget.spend(`${this.prefix}:rl:owner:${ownerId}`, items);
    } catch {
      return; // the limiter's Redis being unreachable does not refuse requests (the queue decides)
    }
    if (!spent.allowed) refuse(reply, this.budget.max, spent.resetMs, 'owner_items');
  }
}

/**
 * Failed authentications per client address, shared with the console's sign-in form: a wrong key
 * typed into the form counts like a request answered INVALID_API_KEY, and once the address is over
 * RATE_LIMIT_AUTH_FAILURES_MAX the form is refused (429) like a keyed request.
 */
export class AuthFailureLimit {
  constructor(
    readonly tally: WindowTally | undefined,
    readonly prefix: string,
    readonly max: number,
  ) {}

  #key(request: FastifyRequest) {
    return `${this.prefix}:rl:authfail:${request.ip}`;
  }

  /** 429 RATE_LIMITED when the client's address has failed too often in the window. */
  async check(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    if (!this.tally) return;
    let failed: { count: number; resetMs: number };
    try {
      failed = await this.tally.read(this.#key(request));
    } catch {
      return;
    }
    if (failed.count >= this.max) refuse(reply, this.max, failed.resetMs, 'auth_failures');
  }

  async add(request: FastifyRequest): Promise<void> {
    await this.tally?.add(this.#key(request)).catch(() => undefined);
  }
}

export interface RateLimits {
  ownerItems: OwnerItemLimit;
  authFailures: AuthFailureLimit;
}

const hashKey = (key: string) => createHash('sha256').update(key).digest('base64url').slice(0, 22);

/**
 * A store for @fastify/rate-limit that spends leased blocks of a shared budget (see rate-budget.ts)
 * instead of its RedisStore's one script call per request.
 */
function leasedStore(budget: LeasedBudget) {
  return class LeasedStore {
    incr(key: string, callback: (err: Error | null, result?: { current: number; ttl: number }) => void): void {
      budget.spend(key, 1).then(
        (spent) => callback(null, { current: spent.allowed ? spent.used : budget.max + 1, ttl: spent.resetMs }),
        (err: Error) => callback(err),
      );
    }
    child(): LeasedStore {
      return this;
    }
  };
}

/** The limits other than the per-owner one, registered on `app` (before the routes). */
export async function registerRateLimits(app: FastifyInstance, config: ApiConfig, redis: Redis | undefined): Promise<RateLimits> {
  const prefix = config.QUEUE_PREFIX;
  if (!config.RATE_LIMITS_ENABLED)
    return {
      ownerItems: new OwnerItemLimit(undefined, prefix),
      authFailures: new AuthFailureLimit(undefined, prefix, config.RATE_LIMIT_AUTH_FAILURES_MAX),
    };
  const windowMs = config.RATE_LIMIT_WINDOW_MS;
  const store: BudgetStore = redis ? redisBudgetStore(redis) : memoryBudgetStore();
  const budget = (max: number) => new LeasedBudget(store, { max, windowMs });

  const addresses = budget(config.RATE_LIMIT_ADDRESS_MAX);
  await app.register(rateLimit, {
    global: true,
    max: config.RATE_LIMIT_ADDRESS_MAX,
    timeWindow: windowMs,
    store: leasedStore(addresses),
    // The limiter's Redis being unreachable does not refuse requests.
    skipOnError: true,
    keyGenerator: (request: FastifyRequest) => `${prefix}:rl:ip:${request.ip}`,
    // Liveness is never limited (a flood must not get the process restarted); it documents no 429.
    allowList: (request: FastifyRequest) => request.url === '/healthz',
    errorResponseBuilder: (_request, context) => {
      rateLimited.inc({ scope: 'address' });
      return new DomainError('RATE_LIMITED', `Rate limit exceeded; retry in ${Math.max(1, Math.ceil(context.ttl / 1000))} s.`);
    },
  });

  // Per API key, on every route that takes one, in addition to the per-address limit.
  const keys = budget(config.RATE_LIMIT_KEY_MAX);
  const failures = new WindowTally(redis, { windowMs });
  app.addHook('onRequest', async (request, reply) => {
    const apiKey = request.headers['x-api-key'];
    if (typeof apiKey !== 'string' || apiKey === '') return;
    let failed: { count: number; resetMs: number };
    let used: Spend;
    try {
      [failed, used] = await Promise.all([
        failures.read(`${prefix}:rl:authfail:${request.ip}`),
        keys.spend(`${prefix}:rl:key:${hashKey(apiKey)}`, 1),
      ]);
    } catch {
      return;
    }
    if (failed.count >= config.RATE_LIMIT_AUTH_FAILURES_MAX)
      refuse(reply, config.RATE_LIMIT_AUTH_FAILURES_MAX, failed.resetMs, 'auth_failures');
    if (!used.allowed) refuse(reply, config.RATE_LIMIT_KEY_MAX, used.resetMs, 'key');
  });
  app.addHook('onSend', async (request, reply, payload) => {
    if (reply.statusCode === 401 && typeof payload === 'string' && payload.includes('"INVALID_API_KEY"')) {
      await failures.add(`${prefix}:rl:authfail:${request.ip}`).catch(() => undefined);
    }
    return payload;
  });
  return {
    ownerItems: new OwnerItemLimit(budget(config.RATE_LIMIT_OWNER_ITEMS_MAX), prefix),
    authFailures: new AuthFailureLimit(failures, prefix, config.RATE_LIMIT_AUTH_FAILURES_MAX),
  };
}
