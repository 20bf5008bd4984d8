import { createTestRedis, type TestRedis } from '@quest/testing';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LeasedBudget, redisBudgetStore, WindowTally } from '../src/rate-budget.ts';

/** The leasing scripts on a real Redis: the same rules as the in-memory store the unit tests use. */

let server: TestRedis;
const clients: Redis[] = [];

beforeAll(async () => {
  server = await createTestRedis();
});
afterAll(async () => {
  for (const c of clients) c.disconnect();
  await server?.cleanup();
});

/** One "API process": its own connection. */
function connect(): Redis {
  const c = new Redis(server.url, { maxRetriesPerRequest: 1 });
  clients.push(c);
  return c;
}

describe('leased budgets in Redis', () => {
  it('never grant more than the maximum over several processes, and count every grant in Redis', async () => {
    const max = 3000;
    const key = `${server.prefix}:rl:owner:o1`;
    const processes = Array.from({ length: 3 }, () => new LeasedBudget(redisBudgetStore(connect()), { max, windowMs: 60_000 }));
    let granted = 0;
    await Promise.all(
      Array.from({ length: 4000 }, (_, i) =>
        processes[i % processes.length]!.spend(key, 1 + (i % 2)).then((s) => {
          if (s.allowed) granted += 1 + (i % 2);
        }),
      ),
    );
    expect(granted).toBeLessThanOrEqual(max);
    expect(granted).toBeGreaterThan(max * 0.9);
    const redis = connect();
    expect(Number(await redis.get(key))).toBeLessThanOrEqual(max);
    const ttl = await redis.pttl(key);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(60_000);
  });

  it('refuse a request that does not fit without counting it', async () => {
    const key = `${server.prefix}:rl:owner:o2`;
    const budget = new LeasedBudget(redisBudgetStore(connect()), { max: 5, windowMs: 60_000 });
    expect((await budget.spend(key, 4)).allowed).toBe(true);
    const refused = await budget.spend(key, 2);
    expect(refused.allowed).toBe(false);
    expect(refused.resetMs).toBeGreaterThan(0);
    expect(await connect().get(key)).toBe('4');
  });
});

describe('failure tally in Redis', () => {
  it('is shared by processes: counted at once here, read by others', async () => {
    const key = `${server.prefix}:rl:authfail:1.2.3.4`;
    const here = new WindowTally(connect(), { windowMs: 60_000 });
    const there = new WindowTally(connect(), { windowMs: 60_000 });
    expect((await there.read(key)).count).toBe(0);
    await here.add(key);
    expect((await here.add(key)).count).toBe(2);
    expect((await here.read(key)).count).toBe(2);
    // A process that never read the key reads it from Redis.
    const third = new WindowTally(connect(), { windowMs: 60_000 });
    expect((await third.read(key)).count).toBe(2);
    // One that read it recently sees a change once its copy is stale.
    const stale = new WindowTally(connect(), { windowMs: 60_000, refreshMs: 0 });
    expect((await stale.read(key)).count).toBe(2);
    await here.add(key);
    expect((await stale.read(key)).count).toBe(3);
  });
});
