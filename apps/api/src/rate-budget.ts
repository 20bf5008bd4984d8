import { readFileSync } from 'node:fs';
import type { Redis } from 'ioredis';

/**
 * Fixed-window budgets shared by every API process, at almost no Redis cost per request.
 *
 * A budget is a counter in Redis per window (one key, so a Redis cluster works). Instead of one
 * round trip per request, a process leases a block of the budget — a share of what is left — and
 * spends it in memory; it asks again only when the block is spent. At the default limits that is
 * one Redis call per ~1,000 requests per key instead of one per request (the cause of a 30 %
 * throughput loss when every request paid three). Near the limit the blocks shrink to one unit, so
 * the limit is exact there: the units granted in a window never exceed the maximum. The price:
 * units leased by one process but not spent are not available to others until the window ends, so
 * a client spreading requests over P processes may be refused up to P blocks early (a block is at
 * most an eighth of what was left and at most `maxLease`).
 *
 * No library does this: @fastify/rate-limit's stores (and rate-limiter-flexible's) are one round
 * trip per request; rate-limiter-flexible's "insurance"/in-memory block only caches refusals.
 */

/** Lease `want` units plus a spare block: answers [units granted, ms left in the window, count after]. */
const LEASE = readFileSync(new URL('./rate-lease.lua', import.meta.url), 'utf8');

/** Where the window counters live: Redis, or this process alone (tests of single routes). */
export interface BudgetStore {
  /** Grant `want` units plus up to `maxLease` spare (0 when `want` does not fit in what is left). */
  lease(key: string, want: number, max: number, windowMs: number, maxLease: number): Promise<Lease>;
}

export interface Lease {
  /** Units granted: 0 (refused) or at least `want`. */
  granted: number;
  /** Milliseconds until the window resets. */
  resetMs: number;
  /** The window's count after this grant (every process's grants). */
  count: number;
}

type LeasingRedis = Redis & {
  questLease(key: string, want: number, max: number, windowMs: number, maxLease: number): Promise<[number, number, number]>;
};

export function redisBudgetStore(redis: Redis): BudgetStore {
  if (!('questLease' in redis)) redis.defineCommand('questLease', { numberOfKeys: 1, lua: LEASE });
  const leasing = redis as LeasingRedis;
  return {
    async lease(key, want, max, windowMs, maxLease) {
      const [granted, resetMs, count] = await leasing.questLease(key, want, max, windowMs, maxLease);
      return { granted, resetMs, count };
    },
  };
}

/** The same rules as the Lua script, in this process's memory. */
export function memoryBudgetStore(now: () => number = Date.now): BudgetStore {
  const windows = new Map<string, { count: number; resetAt: number }>();
  return {
    async lease(key, want, max, windowMs, maxLease) {
      const t = now();
      let w = windows.get(key);
      if (!w || w.resetAt <= t) {
        if (windows.size >= 100_000) for (const [k, v] of windows) if (v.resetAt <= t) windows.delete(k);
        w = { count: 0, resetAt: t + windowMs };
        windows.set(key, w);
      }
      if (w.count + want > max) return { granted: 0, resetMs: w.resetAt - t, count: w.count };
      const granted = want + Math.max(0, Math.min(maxLease, Math.floor((max - w.count - want) / 8)));
      w.count += granted;
      return { granted, resetMs: w.resetAt - t, count: w.count };
    },
  };
}

export interface Spend {
  allowed: boolean;
  /** Units used in this window as far as this process knows (this request included when allowed). */
  used: number;
  /** Milliseconds until the window resets. */
  resetMs: number;
}

interface Block {
  /** Units of this block not yet spent. */
  left: number;
  /** The window's count (every process's grants) when this process last asked the store. */
  count: number;
  resetAt: number;
  /** No unit is left in this window for anyone: refuse without asking the store. */
  exhausted: boolean;
}

export interface LeasedBudgetOptions {
  max: number;
  windowMs: number;
  /** Largest spare block leased at once (default 1,000). */
  maxLease?: number;
  /** Most keys whose blocks are kept in memory (default 100,000); beyond it spent windows go first. */
  maxKeys?: number;
  now?: () => number;
}

/** A budget of `max` units per window per key, spent from leased blocks. */
export class LeasedBudget {
  readonly max: number;
  readonly windowMs: number;
  readonly #maxLease: number;
  readonly #maxKeys: number;
  readonly #now: () => number;
  readonly #blocks = new Map<string, Block>();
  /** One lease call in flight per key: concurrent requests wait for it rather than each asking. */
  readonly #pending = new Map<string, Promise<void>>();

  constructor(
    readonly store: BudgetStore,
    options: LeasedBudgetOptions,
  ) {
    this.max = options.max;
    this.windowMs = options.windowMs;
    this.#maxLease = options.maxLease ?? 1000;
    this.#maxKeys = options.maxKeys ?? 100_000;
    this.#now = options.now ?? Date.now;
  }

  /** Spend `units` of `key`'s budget (a refused request spends nothing). Store errors propagate. */
  async spend(key: string, units: number): Promise<Spend> {
    for (;;) {
      const now = this.#now();
      const block = this.#blocks.get(key);
      if (block && block.resetAt > now) {
        if (block.left >= units) {
          block.left -= units;
          return { allowed: true, used: block.count - block.left, resetMs: block.resetAt - now };
        }
        if (block.exhausted) return { allowed: false, used: this.max, resetMs: block.resetAt - now };
      }
      const pending = this.#pending.get(key);
      if (pending) {
        await pending;
        continue;
      }
      return this.#lease(key, units);
    }
  }

  async #lease(key: string, units: number): Promise<Spend> {
    let release!: () => void;
    this.#pending.set(
      key,
      new Promise<void>((resolve) => {
        release = resolve;
      }),
    );
    try {
      const lease = await this.store.lease(key, units, this.max, this.windowMs, this.#maxLease);
      const now = this.#now();
      const resetAt = now + lease.resetMs;
      if (lease.granted === 0) {
        // Refused: nothing was counted. Remember it only when no request at all could pass (a
        // smaller one may still fit after a large one is refused).
        const exhausted = lease.count >= this.max;
        const old = this.#blocks.get(key);
        this.#put(key, { left: old && old.resetAt > now ? old.left : 0, count: lease.count, resetAt, exhausted });
        return { allowed: false, used: Math.min(this.max, lease.count), resetMs: lease.resetMs };
      }
      const left = lease.granted - units;
      this.#put(key, { left, count: lease.count, resetAt, exhausted: lease.count >= this.max });
      return { allowed: true, used: lease.count - left, resetMs: lease.resetMs };
    } finally {
      this.#pending.delete(key);
      release();
    }
  }

  #put(key: string, block: Block): void {
    if (this.#blocks.size >= this.#maxKeys && !this.#blocks.has(key)) {
      const now = this.#now();
      for (const [k, b] of this.#blocks) if (b.resetAt <= now) this.#blocks.delete(k);
      // Still full: drop the oldest blocks (their unspent units are lost until the window ends).
      for (const k of this.#blocks.keys()) {
        if (this.#blocks.size < this.#maxKeys) break;
        this.#blocks.delete(k);
      }
    }
    this.#blocks.set(key, block);
  }
}

/** Add 1 (or 0 to read): answers [count, ms left in the window]; the window starts at the first hit. */
const TALLY = readFileSync(new URL('./rate-tally.lua', import.meta.url), 'utf8');

type TallyingRedis = Redis & { questTally(key: string, add: number, windowMs: number): Promise<[number, number]> };

export interface TallyOptions {
  windowMs: number;
  /** How stale a count read from Redis may be before it is read again (default 1 s). */
  refreshMs?: number;
  maxKeys?: number;
  now?: () => number;
}

/**
 * A per-window event count (failed authentications per client address), exact when added to and
 * read from Redis at most once per `refreshMs` per key: events counted by other API processes are
 * seen within that time, those counted here at once. Without Redis, this process alone.
 */
export class WindowTally {
  readonly #redis: TallyingRedis | undefined;
  readonly #windowMs: number;
  readonly #refreshMs: number;
  readonly #maxKeys: number;
  readonly #now: () => number;
  readonly #seen = new Map<string, { count: number; resetAt: number; readAt: number }>();

  constructor(redis: Redis | undefined, options: TallyOptions) {
    if (redis && !('questTally' in redis)) redis.defineCommand('questTally', { numberOfKeys: 1, lua: TALLY });
    this.#redis = redis as TallyingRedis | undefined;
    this.#windowMs = options.windowMs;
    this.#refreshMs = options.refreshMs ?? 1000;
    this.#maxKeys = options.maxKeys ?? 100_000;
    this.#now = options.now ?? Date.now;
  }

  /** Count one event for `key`; answers the window's count. */
  async add(key: string): Promise<{ count: number; resetMs: number }> {
    return this.#fetch(key, 1);
  }

  /** The window's count for `key`, read from Redis when what this process knows is stale. */
  async read(key: string): Promise<{ count: number; resetMs: number }> {
    const now = this.#now();
    const seen = this.#seen.get(key);
    if (seen && seen.resetAt > now && now - seen.readAt < this.#refreshMs)
      return { count: seen.count, resetMs: seen.resetAt - now };
    if (!this.#redis) return { count: 0, resetMs: this.#windowMs };
    return this.#fetch(key, 0);
  }

  async #fetch(key: string, add: number): Promise<{ count: number; resetMs: number }> {
    const now = this.#now();
    let count: number;
    let resetMs: number;
    if (this.#redis) {
      [count, resetMs] = await this.#redis.questTally(key, add, this.#windowMs);
      if (count === 0) resetMs = this.#windowMs;
    } else {
      const seen = this.#seen.get(key);
      const live = seen && seen.resetAt > now;
      count = (live ? seen.count : 0) + add;
      resetMs = live ? seen.resetAt - now : this.#windowMs;
    }
    if (this.#seen.size >= this.#maxKeys && !this.#seen.has(key)) {
      for (const [k, v] of this.#seen) if (v.resetAt <= now || now - v.readAt >= this.#refreshMs) this.#seen.delete(k);
      if (this.#seen.size >= this.#maxKeys) this.#seen.clear();
    }
    // Without Redis the entry is the count itself, so it never goes stale.
    this.#seen.set(key, { count, resetAt: now + resetMs, readAt: this.#redis ? now : Number.POSITIVE_INFINITY });
    return { count, resetMs };
  }
}
