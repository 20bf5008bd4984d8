import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { get, post, seed, startSystem, type System } from './harness.ts';

let system: System;

beforeAll(async () => {
  system = await startSystem({ workers: 0, partitions: 4, env: { ALLOCATION_WAIT_MS: '500' } });
});
afterAll(async () => system?.stop());

describe('the 202 path', () => {
  it('answers 202 within the wait when no worker runs, then the status endpoint shows the outcome', async () => {
    const { apiKey, questIds, accounts } = await seed(system, { quests: 1, total: 100 });
    const q = questIds[0]!;
    const started = Date.now();
    const res = await post(system, `/quests/${q}`, { points: 40, address: accounts[0]! }, { 'x-api-key': apiKey });
    const elapsed = Date.now() - started;
    expect(res.status).toBe(202);
    expect(elapsed).toBeLessThan(3000);
    expect(res.body).toEqual({ allocation: { id: expect.stringMatching(/^alc_/), status: 'pending' } });
    const location = res.headers.get('location')!;
    expect(location).toBe(`/quests/${q}/allocations/${res.body.allocation.id}`);
    const over = await post(system, `/quests/${q}`, { points: 70, address: accounts[1]! }, { 'x-api-key': apiKey });
    expect(over.status).toBe(202);

    const pending = await get(system, location, { 'x-api-key': apiKey });
    expect(pending.status).toBe(200);
    expect(pending.body).toEqual({ allocation: { id: res.body.allocation.id, status: 'pending' } });
    // Owner-only, and unknown ids are 404.
    expect((await get(system, location)).status).toBe(401);
    expect((await get(system, `/quests/${q}/allocations/alc_nope`, { 'x-api-key': apiKey })).body.code).toBe(
      'ALLOCATION_NOT_FOUND',
    );

    await system.startWorker();
    const deadline = Date.now() + 15_000;
    let status: any;
    do {
      await new Promise((r) => setTimeout(r, 200));
      status = (await get(system, location, { 'x-api-key': apiKey })).body;
    } while (status.allocation.status === 'pending' && Date.now() < deadline);
    expect(status.allocation).toMatchObject({ status: 'completed', payout: { amount: 40, account: { pass: accounts[0] } } });
    const second = (await get(system, over.headers.get('location')!, { 'x-api-key': apiKey })).body;
    expect(second.allocation).toEqual({
      id: over.body.allocation.id,
      status: 'rejected',
      error: { code: 'INSUFFICIENT_POINTS', message: expect.any(String) },
    });
  });
});
