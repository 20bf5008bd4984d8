import { describe, expect } from 'vitest';
import {
  applyRequests,
  findStrandedBatches,
  findStrandedRequests,
  getAllocationStatus,
  getReversalStatus,
  markAllocationsFailed,
  pendingWork,
  recordPendingRequest,
  touchRequest,
} from '@quest/db';
import { test } from '@quest/testing';

describe('request lifecycle', () => {
  test('a failure that lands before its 202 marker is not overwritten; a later enqueue is pending again', async ({
    database,
    quest,
    accounts: [address],
  }) => {
    const mark = { questId: quest, key: 'alc_kraced', address: address!, points: 3, enqueuedAt: 1_000, jobId: '7' };
    // The worker gives the item up first, then the API writes the marker of the same enqueue.
    await markAllocationsFailed(database.sql, [mark]);
    await recordPendingRequest(database.sql, mark);
    expect(await getAllocationStatus(database.sql, quest, mark.key)).toMatchObject({
      status: 'failed',
      code: 'ALLOCATION_FAILED',
    });
    // The client retries with the same key: a later enqueue, pending again, whichever write lands first.
    const retry = { ...mark, enqueuedAt: 2_000, jobId: '9' };
    await markAllocationsFailed(database.sql, [{ ...mark, enqueuedAt: 1_500 }]);
    await recordPendingRequest(database.sql, retry);
    expect(await getAllocationStatus(database.sql, quest, mark.key)).toMatchObject({ status: 'pending' });
    await markAllocationsFailed(database.sql, [{ ...mark, enqueuedAt: 1_800 }]);
    expect(await getAllocationStatus(database.sql, quest, mark.key)).toMatchObject({ status: 'pending' });
  });

  test('a failure never contradicts a stored outcome', async ({ database, quest, accounts: [address] }) => {
    const item = { key: 'alc_kpaid', questId: quest, points: 2, address: address! };
    const [paid] = await applyRequests(database.sql, [item], { firstDelivery: false });
    await markAllocationsFailed(database.sql, [{ ...item, enqueuedAt: Date.now() }]);
    expect(await getAllocationStatus(database.sql, quest, item.key)).toMatchObject({
      status: 'completed',
      payout: (paid as { payout: unknown }).payout,
    });
    const [row] = await database.sql`select count(*)::int as n from allocation_requests where request_key = ${item.key}`;
    expect(row).toEqual({ n: 0 });
  });

  test('stranded work: undecided 202s and unfinished batches older than the threshold, until touched', async ({
    database,
    quest,
    owner,
    accounts: [address],
  }) => {
    const mark = { questId: quest, key: 'alc_kstranded', address: address!, points: 1, enqueuedAt: Date.now() };
    await recordPendingRequest(database.sql, mark);
    await database.sql`insert into batches (id, quest_id, owner_id, items_digest, total, addresses, points)
                       values ('bat_kstranded', ${quest}, ${owner.id}, 'd', 1, ${[address!]}::text[], ${[1]}::bigint[])`;
    const keys = async () => (await findStrandedRequests(database.sql, { olderThanMs: 0, limit: 100 })).map((r) => r.request_key);
    const batches = async () => (await findStrandedBatches(database.sql, { olderThanMs: 0, limit: 100 })).map((b) => b.id);
    expect(await keys()).toContain(mark.key);
    expect(await batches()).toContain('bat_kstranded');
    // Too young for the threshold: left alone.
    expect(
      (await findStrandedRequests(database.sql, { olderThanMs: 3_600_000, limit: 100 })).map((r) => r.request_key),
    ).not.toContain(mark.key);
    await touchRequest(database.sql, { questId: quest, key: mark.key, jobId: '42', redriven: true });
    const [row] = await database.sql<{ job_id: string; redrives: number }[]>`
      select job_id, redrives from allocation_requests where request_key = ${mark.key}`;
    expect(row).toEqual({ job_id: '42', redrives: 1 });
    // Decided: no longer stranded.
    await applyRequests(database.sql, [mark], { firstDelivery: false });
    expect(await keys()).not.toContain(mark.key);
  });

  test('a reversal: pending marker, stranded with its kind and fields, then decided; failed markers never contradict it', async ({
    database,
    quest,
    accounts: [address],
  }) => {
    const [paid] = await applyRequests(
      database.sql,
      [{ key: 'alc_kfor-reversal', questId: quest, points: 9, address: address! }],
      {
        firstDelivery: false,
      },
    );
    const payoutId = (paid as { payout: { id: string } }).payout.id;
    const mark = {
      kind: 'reversal' as const,
      questId: quest,
      key: 'rev_kstranded',
      payoutId,
      points: 4,
      reason: 'dupe',
      enqueuedAt: Date.now(),
      jobId: '5',
    };
    await recordPendingRequest(database.sql, mark);
    expect(await getReversalStatus(database.sql, quest, mark.key)).toMatchObject({ status: 'pending', payoutId });
    // Not an allocation's status, and not another quest's.
    expect(await getAllocationStatus(database.sql, quest, mark.key)).toBeUndefined();
    expect(await getReversalStatus(database.sql, quest + 1, mark.key)).toBeUndefined();
    const stranded = await findStrandedRequests(database.sql, { olderThanMs: 0, limit: 100 });
    expect(stranded.find((r) => r.request_key === mark.key)).toMatchObject({
      kind: 'reversal',
      payout_id: payoutId,
      points: 4,
      reason: 'dupe',
      address: null,
      job_id: '5',
    });
    const pendingBefore = (await pendingWork(database.sql)).requests.count;
    await applyRequests(database.sql, [mark], { firstDelivery: false });
    // Decided: no longer counted as pending work (quest-admin status).
    expect((await pendingWork(database.sql)).requests.count).toBe(pendingBefore - 1);
    expect(await getReversalStatus(database.sql, quest, mark.key)).toMatchObject({
      status: 'completed',
      reversal: { id: mark.key, payout_id: payoutId, amount: 4, reason: 'dupe', account: { pass: address } },
    });
    expect((await findStrandedRequests(database.sql, { olderThanMs: 0, limit: 100 })).map((r) => r.request_key)).not.toContain(
      mark.key,
    );
    await markAllocationsFailed(database.sql, [{ ...mark, enqueuedAt: Date.now() + 1000 }]);
    expect(await getReversalStatus(database.sql, quest, mark.key)).toMatchObject({ status: 'completed' });
    // A rejected reversal reads as rejected, with its code.
    await applyRequests(database.sql, [{ ...mark, key: 'rev_ktoo-much', points: 99 }], { firstDelivery: false });
    expect(await getReversalStatus(database.sql, quest, 'rev_ktoo-much')).toMatchObject({
      status: 'rejected',
      code: 'REVERSAL_EXCEEDS_PAYOUT',
      payoutId,
    });
  });
});
