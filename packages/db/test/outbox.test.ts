import { describe, expect } from 'vitest';
import {
  applyBatchChunk,
  applyRequests,
  BatchProgressMoved,
  eventPosition,
  getBatchProgress,
  insertBatch,
  insertEvents,
  listEvents,
  publishEvents,
  purgeEvents,
  type Sql,
} from '@quest/db';
import { batchSummaryView, idTimeBound, newId } from '@quest/domain';
import { createTestEndpoint, test } from '@quest/testing';

/** Publish until nothing is left (another test file never shares this database). */
async function publishAll(sql: Sql) {
  let total = 0;
  for (;;) {
    const r = await publishEvents(sql, 1000);
    total += r.published;
    if (r.published === 0) return total;
  }
}

const types = (rows: { type: string }[]) => rows.map((r) => r.type);

describe('the events outbox', () => {
  test('a ledger transaction writes one event per item decided, with the decision, and none for replays', async ({
    database,
    owner,
    makeQuest,
    accounts,
  }) => {
    const { sql } = database;
    const q = await makeQuest({ totalPoints: 100 });
    const items = [
      { key: `alc_a${q}`, questId: q, points: 60, address: accounts[0]! },
      { key: `alc_b${q}`, questId: q, points: 50, address: accounts[1]! },
    ];
    const [paid] = await applyRequests(sql, items, { firstDelivery: true });
    await applyRequests(sql, items, { firstDelivery: false }); // a redelivered job: replays only
    const rows = await sql<{ type: string; owner_id: string; allocation_id: string; data: any; position: number | null }[]>`
      select type, owner_id, allocation_id, data, position from events where quest_id = ${q} order by id`;
    expect(rows.map((r) => [r.type, r.allocation_id])).toEqual([
      ['payout.created', items[0]!.key],
      ['allocation.rejected', items[1]!.key],
    ]);
    expect(rows[0]!.owner_id).toBe(owner.id);
    expect(rows[0]!.data).toEqual({ payout: (paid as { payout: unknown }).payout });
    expect(rows[1]!.data.allocation.error.code).toBe('INSUFFICIENT_POINTS');
    // Unpublished until the publisher numbers them: the feed cannot show them yet.
    expect(rows.every((r) => r.position === null)).toBe(true);
  });

  test('a reversal writes payout.reversed with its decision; a refused or replayed one writes nothing', async ({
    database,
    makeQuest,
    accounts,
  }) => {
    const { sql } = database;
    const q = await makeQuest({ totalPoints: 100 });
    const [paid] = await applyRequests(sql, [{ key: `alc_r${q}`, questId: q, points: 30, address: accounts[0]! }], {
      firstDelivery: true,
    });
    const payoutId = (paid as { payout: { id: string } }).payout.id;
    const reverse = (key: string) => ({ kind: 'reversal' as const, key, questId: q, payoutId, reason: 'bot farm' });
    const [reversed, refused] = await applyRequests(sql, [reverse(`rev_a${q}`), reverse(`rev_b${q}`)], { firstDelivery: true });
    expect(refused).toMatchObject({ status: 'rejected', code: 'PAYOUT_ALREADY_REVERSED' });
    await applyRequests(sql, [reverse(`rev_a${q}`)], { firstDelivery: false }); // a redelivered job: a replay
    const rows = await sql<{ type: string; allocation_id: string | null; data: any }[]>`
      select type, allocation_id, data from events where quest_id = ${q} order by id`;
    expect(rows.map((r) => r.type)).toEqual(['payout.created', 'payout.reversed']);
    expect(rows[1]).toEqual({
      type: 'payout.reversed',
      allocation_id: null,
      data: { reversal: (reversed as { reversal: unknown }).reversal },
    });
    expect(rows[1]!.data.reversal).toMatchObject({ payout_id: payoutId, amount: 30, reason: 'bot farm' });
  });

  test('a batch chunk that is rolled back leaves no event; the last chunk adds batch.completed after its payouts', async ({
    database,
    owner,
    makeQuest,
    accounts,
  }) => {
    const { sql } = database;
    const q = await makeQuest({ totalPoints: 1000 });
    const batchId = `bat_${newId('bat').slice(4)}`;
    await insertBatch(sql, {
      id: batchId,
      questId: q,
      ownerId: owner.id,
      digest: 'd',
      addresses: accounts.slice(0, 3),
      points: [1, 2, 3],
    });
    const item = (i: number) => ({
      key: `${batchId}:${i}`,
      questId: q,
      points: i + 1,
      address: accounts[i]!,
      batchId,
      itemIndex: i,
    });
    await applyBatchChunk(sql, { batchId, start: 0, items: [item(0), item(1)] });
    // A second copy of the same chunk: the progress guard rolls it back, events included.
    await expect(applyBatchChunk(sql, { batchId, start: 0, items: [item(0), item(1)] })).rejects.toBeInstanceOf(
      BatchProgressMoved,
    );
    await applyBatchChunk(sql, { batchId, start: 2, items: [item(2)] });
    const rows = await sql<{ type: string; allocation_id: string | null; data: any }[]>`
      select type, allocation_id, data from events where batch_id = ${batchId} order by id`;
    expect(rows.map((r) => r.allocation_id ?? r.type)).toEqual([
      `${batchId}:0`,
      `${batchId}:1`,
      `${batchId}:2`,
      'batch.completed',
    ]);
    expect(rows[3]!.data.batch).toMatchObject({
      id: batchId,
      status: 'completed',
      total: 3,
      processed: 3,
      succeeded: 3,
      failed: 0,
    });
    expect(rows[3]!.data.batch.completed_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    // The event carries the batch exactly as its route answers it: the row and the event are one computation.
    expect(rows[3]!.data.batch).toEqual(batchSummaryView((await getBatchProgress(sql, batchId))!));
  });

  test('the publisher numbers events in commit order, so a reader after position p never misses a later commit', async ({
    database,
    owner,
  }) => {
    const { sql } = database;
    await publishAll(sql);
    const event = (id: string, type: 'payout.created' | 'quest.budget_low' = 'payout.created') => ({
      id,
      ownerId: owner.id,
      type,
      questId: null,
      allocationId: null,
      batchId: null,
      data: {},
      createdAt: new Date(),
    });
    // An id made first, committed last (another worker's slower transaction).
    const early = newId('evt');
    const a = newId('evt');
    const b = newId('evt');
    await insertEvents(sql, [event(a), event(b, 'quest.budget_low')]);
    await publishAll(sql);
    const seen = await listEvents(sql, { ownerId: owner.id, after: 0, limit: 100 });
    const cursor = seen.at(-1)!;
    expect(cursor.id).toBe(b);
    await insertEvents(sql, [event(early)]);
    expect(await listEvents(sql, { ownerId: owner.id, after: cursor.position, limit: 100 })).toEqual([]);
    await publishAll(sql);
    const next = await listEvents(sql, { ownerId: owner.id, after: cursor.position, limit: 100 });
    expect(next.map((e) => e.id)).toEqual([early]);
    expect(types(await listEvents(sql, { ownerId: owner.id, after: 0, limit: 100, types: ['quest.budget_low'] }))).toEqual([
      'quest.budget_low',
    ]);
    expect(await eventPosition(sql, owner.id, b)).toBe(cursor.position);
    expect(await eventPosition(sql, 'own_someone_else', b)).toBeUndefined();
  });

  test('publishers running at once take turns: every event numbered once, positions 1…n without a gap', async ({
    database,
    owner,
  }) => {
    const { sql } = database;
    await publishAll(sql);
    const [max] = await sql<{ before: number }[]>`select coalesce(max(position), 0)::int as before from events`;
    const before = max!.before;
    expect(await publishEvents(sql, 10)).toEqual({ ran: false, published: 0, deliveries: 0 });
    const ids = Array.from({ length: 60 }, () => newId('evt'));
    await insertEvents(
      sql,
      ids.map((id) => ({
        id,
        ownerId: owner.id,
        type: 'payout.created' as const,
        questId: null,
        allocationId: null,
        batchId: null,
        data: {},
        createdAt: new Date(),
      })),
    );
    // Four pumps at once, pages of 7: each step waits for the one holding the publisher's lock.
    const pump = async () => {
      let n = 0;
      for (let r = await publishEvents(sql, 7); r.ran && r.published > 0; r = await publishEvents(sql, 7)) n += r.published;
      return n;
    };
    const counts = await Promise.all([pump(), pump(), pump(), pump()]);
    expect(counts.reduce((a, b) => a + b, 0)).toBe(ids.length);
    const rows = await sql<{ id: string; position: number }[]>`
      select id, position::int from events where position > ${before} order by position`;
    expect(rows.map((r) => r.position)).toEqual(ids.map((_, i) => before + i + 1));
    expect(rows.map((r) => r.id)).toEqual(ids);
  });

  test('publishing fans out one delivery per subscribed endpoint; purging deletes old events with their deliveries', async ({
    database,
    owner,
  }) => {
    const { sql } = database;
    await publishAll(sql);
    const all = await createTestEndpoint(sql, owner.id, { url: 'https://example.com/a' });
    const some = await createTestEndpoint(sql, owner.id, { url: 'https://example.com/b', eventTypes: ['batch.completed'] });
    const old = new Date(Date.now() - 40 * 86_400_000);
    // newId is monotonic within a process (it would not go back 40 days): build an id of that time.
    const oldId = `${idTimeBound('evt', old.getTime())}0000000000000000`;
    const newer = newId('evt');
    const row = (id: string, type: string, createdAt: Date) => ({
      id,
      ownerId: owner.id,
      type: type as 'payout.created',
      questId: null,
      allocationId: null,
      batchId: null,
      data: {},
      createdAt,
    });
    await insertEvents(sql, [row(oldId, 'payout.created', old), row(newer, 'batch.completed', new Date())]);
    const published = await publishEvents(sql, 1000);
    expect(published).toMatchObject({ ran: true, published: 2, deliveries: 3 });
    const count = async (endpointId: string) =>
      (await sql<{ n: number }[]>`select count(*)::int as n from webhook_deliveries where endpoint_id = ${endpointId}`)[0]!.n;
    expect([await count(all.id), await count(some.id)]).toEqual([2, 1]);
    // A delivery left behind by a purge that relied on the foreign key's cascade (before migration
    // 00012), or written by a replay while its event was purged: its event is gone, and as old.
    const leftover = `${idTimeBound('evt', old.getTime() - 1000)}0000000000000000`;
    await sql`insert into webhook_deliveries (endpoint_id, event_id) values (${all.id}, ${leftover})`;
    expect(await purgeEvents(sql, new Date(Date.now() - 30 * 86_400_000), 1000)).toEqual({ events: 1, deliveries: 2 });
    expect(await count(all.id)).toBe(1);
    expect((await sql`select 1 from events where id = ${newer}`).length).toBe(1);
  });
});
