import { describe, expect } from 'vitest';
import { deleteKeysWithPrefix } from '@quest/queue';
import { Redis } from 'ioredis';
import { auditViolations, post, settle, systemTest } from '@quest/testing';

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
  test('re-drives every 202 and every batch after Redis lost them, without restarting anything', async ({
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
    for (const r of [...singles, batch]) expect(r.status).toBe(202);

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
      [...singles, batch].map((r) => settle(system, r.headers.get('location')!, owner.apiKey, 30_000)),
    );
    expect(outcomes.slice(0, -1).map((o) => o.allocation.status)).toEqual(accounts.map(() => 'completed'));
    expect(outcomes.at(-1).batch).toMatchObject({ status: 'completed', succeeded: accounts.length, failed: 0 });

    // Exactly once: one payout per request, whatever the re-drives did.
    const [counts] = await system.db.sql<{ payouts: number; keys: number }[]>`
      select count(*)::int as payouts, count(distinct (request_key))::int as keys from payouts where quest_id = ${questId}`;
    expect(counts).toEqual({ payouts: 2 * accounts.length, keys: 2 * accounts.length });
    const [redriven] = await system.db.sql<{ requests: number; batches: number }[]>`
      select (select count(*)::int from allocation_requests where redrives > 0) as requests,
             (select count(*)::int from batches where redrives > 0) as batches`;
    expect(redriven).toEqual({ requests: accounts.length, batches: 1 });
    expect(await auditViolations(system.db.sql)).toEqual([]);
  });
});
