import { describe, expect } from 'vitest';
import { deleteKeysWithPrefix } from '@quest/queue';
import { Redis } from 'ioredis';
import { auditViolations, createAccount, createPayouts, post, randomAddress, settle, systemTest } from '@quest/testing';

// No worker at first, short waits: every request is answered 202 and stays queued.
const test = systemTest({
  workers: 0,
  partitions: 4,
  env: {
    ALLOCATION_WAIT_MS: '200',
    BATCH_WAIT_MS: '200',
    RECONCILER_INTERVAL_MS: '200',
    RECONCILER_MIN_AGE_MS: '300',
  },
});

describe('the reconciler', () => {
  test('re-drives every 202 (allocations and a reversal) and every batch after Redis lost them, without restarting anything', async ({
    system,
    owner,
    makeQuest,
    accounts,
  }) => {
    const questId = await makeQuest({ totalPoints: 1_000 });
    const headers = (key: string) => ({ 'x-api-key': owner.apiKey, 'idempotency-key': key });
    const singles = await Promise.all(
      accounts.map((address, i) => post(system, `/quests/${questId}`, { points: 1 + i, address }, headers(`lost-${i}`))),
    );
    const batch = await post(
      system,
      `/quests/${questId}/batches`,
      { allocations: accounts.map((address) => ({ address, points: 10 })) },
      headers('lost-batch'),
    );
    // A payout credited earlier, and a reversal of part of it, answered 202 like the rest.
    const [paid] = await createPayouts(system.db.sql, questId, await createAccount(system.db.sql, randomAddress()), [30]);
    const reversal = await post(
      system,
      `/quests/${questId}/payouts/${paid!.id}/reversals`,
      { points: 12, reason: 'lost in Redis' },
      headers('lost-reversal'),
    );
    for (const r of [...singles, batch, reversal]) expect(r.status).toBe(202);

    // Redis loses everything this service had there: queues, jobs, pool state.
    const redis = new Redis(system.redis.url);
    try {
      await deleteKeysWithPrefix(redis, system.redis.prefix);
    } finally {
      redis.disconnect();
    }

    // A worker joins; nobody re-sends anything.
    await system.startWorker();
    const outcomes = await Promise.all(
      [...singles, batch, reversal].map((r) => settle(system, r.headers.get('location')!, owner.apiKey, 30_000)),
    );
    expect(outcomes.slice(0, accounts.length).map((o) => o.allocation.status)).toEqual(accounts.map(() => 'completed'));
    expect(outcomes[accounts.length].batch).toMatchObject({ status: 'completed', succeeded: accounts.length, failed: 0 });
    expect(outcomes.at(-1).reversal).toMatchObject({
      status: 'completed',
      payout_id: paid!.id,
      amount: 12,
      reason: 'lost in Redis',
    });

    // Exactly once: one payout per request, whatever the re-drives did.
    const [counts] = await system.db.sql<{ payouts: number; keys: number }[]>`
      select count(*)::int as payouts, count(distinct (request_key))::int as keys from payouts where quest_id = ${questId}`;
    expect(counts).toEqual({ payouts: 2 * accounts.length + 1, keys: 2 * accounts.length + 1 });
    const [reversed] = await system.db.sql<{ n: number; sum: number }[]>`
      select count(*)::int as n, coalesce(sum(amount), 0)::int8 as sum from reversals where payout_id = ${paid!.id}`;
    expect(reversed).toEqual({ n: 1, sum: 12 });
    const [redriven] = await system.db.sql<{ requests: number; reversals: number; batches: number }[]>`
      select (select count(*)::int from allocation_requests where redrives > 0) as requests,
             (select count(*)::int from allocation_requests where redrives > 0 and kind = 'reversal') as reversals,
             (select count(*)::int from batches where redrives > 0) as batches`;
    expect(redriven).toEqual({ requests: accounts.length + 1, reversals: 1, batches: 1 });
    expect(await auditViolations(system.db.sql)).toEqual([]);
  });
});
