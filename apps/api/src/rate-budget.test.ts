import { describe, expect, it } from 'vitest';
import { type BudgetStore, LeasedBudget, memoryBudgetStore, WindowTally } from './rate-budget.ts';

/** A store that counts the calls made to it (each would be one Redis round trip). */
function counting(store: BudgetStore) {
  const counted = {
    calls: 0,
    lease: (...args: Parameters<BudgetStore['lease']>) => {
      counted.calls++;
      return store.lease(...args);
    },
  };
  return counted;
}

function clock(start = 1_000_000) {
  const c = { t: start, now: () => c.t };
  return c;
}

describe('LeasedBudget', () => {
  it('asks the store once per leased block, not once per request', async () => {
    const store = counting(memoryBudgetStore());
    const maxLease = 100;
    const budget = new LeasedBudget(store, { max: 1_000_000, windowMs: 60_000, maxLease });
    const requests = 1000;
    for (let i = 0; i < requests; i++) expect((await budget.spend('k', 1)).allowed).toBe(true);
    // Far from the limit every block is the request plus a full spare block.
    expect(store.calls).toBe(Math.ceil(requests / (1 + maxLease)));
  });

  it('never grants more than the maximum across processes sharing a store, in any order', async () => {
    const c = clock();
    const store = memoryBudgetStore(c.now);
    const max = 5000;
    const processes = Array.from({ length: 4 }, () => new LeasedBudget(store, { max, windowMs: 60_000, now: c.now }));
    let granted = 0;
    let seed = 7;
    const random = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const spends: Promise<void>[] = [];
    for (let i = 0; i < 8000; i++) {
      const units = 1 + Math.floor(random() * 3);
      const p = processes[Math.floor(random() * processes.length)]!;
      spends.push(
        p.spend('owner', units).then((s) => {
          if (s.allowed) granted += units;
        }),
      );
    }
    await Promise.all(spends);
    expect(granted).toBeLessThanOrEqual(max);
    // Units leased by one process but not spent are lost to the others: at most one small block
    // each, since near the limit a block is an eighth of what is left.
    expect(granted).toBeGreaterThan(max * 0.9);
  });

  it('lets one process spend exactly the maximum, then refuses', async () => {
    const budget = new LeasedBudget(memoryBudgetStore(), { max: 1000, windowMs: 60_000 });
    for (let i = 0; i < 1000; i++) expect((await budget.spend('k', 1)).allowed, `request ${i + 1}`).toBe(true);
    const refused = await budget.spend('k', 1);
    expect(refused).toMatchObject({ allowed: false, used: 1000 });
  });

  it('spends nothing for a refused request: a smaller one still fits', async () => {
    const budget = new LeasedBudget(memoryBudgetStore(), { max: 5, windowMs: 60_000 });
    expect((await budget.spend('k', 4)).allowed).toBe(true);
    expect((await budget.spend('k', 2)).allowed).toBe(false);
    expect((await budget.spend('k', 1)).allowed).toBe(true);
    expect((await budget.spend('k', 1)).allowed).toBe(false);
  });

  it('refuses without asking the store once the window is spent, and starts over in the next window', async () => {
    const c = clock();
    const store = counting(memoryBudgetStore(c.now));
    const budget = new LeasedBudget(store, { max: 2, windowMs: 60_000, now: c.now });
    await budget.spend('k', 1);
    await budget.spend('k', 1);
    const refused = await budget.spend('k', 1);
    expect(refused).toMatchObject({ allowed: false, resetMs: 60_000 });
    const calls = store.calls;
    expect((await budget.spend('k', 1)).allowed).toBe(false);
    expect(store.calls).toBe(calls);
    c.t += 60_000;
    expect((await budget.spend('k', 1)).allowed).toBe(true);
  });

  it('reports the units used, for the x-ratelimit-remaining header', async () => {
    const budget = new LeasedBudget(memoryBudgetStore(), { max: 100, windowMs: 60_000 });
    expect((await budget.spend('k', 3)).used).toBe(3);
    expect((await budget.spend('k', 2)).used).toBe(5);
  });

  it('makes one store call for concurrent requests that find no block', async () => {
    const store = counting(memoryBudgetStore());
    const budget = new LeasedBudget(store, { max: 1_000_000, windowMs: 60_000, maxLease: 100 });
    const results = await Promise.all(Array.from({ length: 50 }, () => budget.spend('k', 1)));
    expect(results.every((r) => r.allowed)).toBe(true);
    expect(store.calls).toBe(1);
  });

  it('keeps at most maxKeys blocks in memory', async () => {
    const store = counting(memoryBudgetStore());
    const budget = new LeasedBudget(store, { max: 1000, windowMs: 60_000, maxKeys: 10 });
    for (let i = 0; i < 100; i++) await budget.spend(`k${i}`, 1);
    const calls = store.calls;
    // The newest keys kept their blocks; the oldest were dropped and must ask again.
    await budget.spend('k99', 1);
    expect(store.calls).toBe(calls);
    await budget.spend('k0', 1);
    expect(store.calls).toBe(calls + 1);
  });

  it('lets store errors through (the caller decides to fail open)', async () => {
    const budget = new LeasedBudget(
      {
        lease: () => Promise.reject(new Error('down')),
      },
      { max: 10, windowMs: 1000 },
    );
    await expect(budget.spend('k', 1)).rejects.toThrow('down');
    await expect(budget.spend('k', 1)).rejects.toThrow('down');
  });
});

describe('WindowTally without Redis', () => {
  it('counts events per key per window', async () => {
    const c = clock();
    const tally = new WindowTally(undefined, { windowMs: 10_000, now: c.now });
    expect((await tally.read('ip')).count).toBe(0);
    await tally.add('ip');
    expect(await tally.add('ip')).toEqual({ count: 2, resetMs: 10_000 });
    c.t += 4000;
    expect(await tally.read('ip')).toEqual({ count: 2, resetMs: 6000 });
    expect((await tally.read('other')).count).toBe(0);
    c.t += 6000;
    expect((await tally.read('ip')).count).toBe(0);
  });
});
