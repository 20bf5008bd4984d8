import { describe, expect } from 'vitest';
import { get, post, settle, systemTest } from '@quest/testing';

// No worker at first, so every allocation waits out ALLOCATION_WAIT_MS and is answered 202.
const test = systemTest({ workers: 0, partitions: 4, env: { ALLOCATION_WAIT_MS: '500' } });

describe('the 202 path', () => {
  test('answers 202 when no worker decides in time, then the status endpoint shows the outcome', async ({
    system,
    owner,
    makeQuest,
    accounts,
  }) => {
    const q = await makeQuest({ totalPoints: 100 });
    const auth = { 'x-api-key': owner.apiKey };
    const res = await post(system, `/quests/${q}`, { points: 40, address: accounts[0]! }, auth);
    expect(res.status).toBe(202);
    expect(res.body).toEqual({
      allocation: { id: expect.stringMatching(/^alc_/), status: 'pending', updated_at: expect.any(String) },
    });
    const location = res.headers.get('location')!;
    expect(location).toBe(`/quests/${q}/allocations/${res.body.allocation.id}`);
    const over = await post(system, `/quests/${q}`, { points: 70, address: accounts[1]! }, auth);
    expect(over.status).toBe(202);

    const pending = await get(system, location, auth);
    expect(pending.status).toBe(200);
    // Last touched when it was accepted (the 202 marker), until something happens to it.
    expect(pending.body).toEqual({
      allocation: { id: res.body.allocation.id, status: 'pending', updated_at: expect.any(String) },
    });
    expect(Date.parse(pending.body.allocation.updated_at)).toBeGreaterThanOrEqual(Date.parse(res.body.allocation.updated_at));
    // Owner-only, and unknown ids are 404.
    expect((await get(system, location)).status).toBe(401);
    expect((await get(system, `/quests/${q}/allocations/alc_00000000000000000000000000`, auth)).body.code).toBe(
      'ALLOCATION_NOT_FOUND',
    );

    await system.startWorker();
    const done = await settle(system, location, owner.apiKey);
    expect(done.allocation).toMatchObject({ status: 'completed', payout: { amount: 40, account: { pass: accounts[0] } } });
    const second = await settle(system, over.headers.get('location')!, owner.apiKey);
    expect(second.allocation).toEqual({
      id: over.body.allocation.id,
      status: 'rejected',
      updated_at: expect.any(String),
      error: { code: 'INSUFFICIENT_POINTS', message: expect.any(String) },
    });
  });
});
