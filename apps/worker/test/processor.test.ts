import type { Job } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSql } from '@quest/db';
import { toChecksumAddress } from '@quest/domain';
import { createTestDatabase, type TestDatabase } from '@quest/testing';
import { processAllocate, type ProcessorDeps } from '../src/processor.ts';

let db: TestDatabase;
const address = (n: number) => toChecksumAddress(`0x${n.toString(16).padStart(40, '0')}`)!;
const logs: string[] = [];
const logger = {
  warn: (_: object, msg?: string) => logs.push(`warn ${msg}`),
  error: (_: object, msg?: string) => logs.push(`error ${msg}`),
};
const deps = (over: Partial<ProcessorDeps> = {}): ProcessorDeps => ({
  sql: db.sql,
  workerId: 'test-worker',
  maxAttempts: 3,
  retryBaseMs: 1,
  batchChunkSize: 100,
  logger,
  ...over,
});
const job = (items: unknown[], attemptsStarted = 1) =>
  ({ id: '1', name: 'allocate', data: { items }, attemptsStarted, stalledCounter: 0 }) as unknown as Job;

let questId: number;
beforeAll(async () => {
  db = await createTestDatabase({ max: 3 });
  await db.sql`insert into owners (id, name, pass_address) values ('own_w', 'W', ${address(999)})`;
  await db.sql`insert into accounts (pass_address) values (${address(1)}), (${address(2)}), (${address(3)})`;
  // Account 2 is one point short of the largest balance the database accepts.
  await db.sql`update accounts set balance = 9007199254740990 where pass_address = ${address(2)}`;
  const [q] = await db.sql<{ id: number }[]>`
    insert into quests (owner_id, name, start_at, end_at, total_points, points_remaining)
    values ('own_w', 'Q', now() - interval '1 hour', now() + interval '1 day', 1000, 1000) returning id`;
  questId = q!.id;
});
afterAll(async () => db?.drop());

describe('processAllocate', () => {
  it('decides every item of a coalesced job in one go', async () => {
    const result = await processAllocate(
      deps(),
      job([
        { key: 'a1', questId, points: 5, address: address(1) },
        { key: 'a2', questId, points: 5, address: address(3) },
      ]),
    );
    expect(result.worker).toBe('test-worker');
    expect(result.outcomes.map((o) => o.status)).toEqual(['completed', 'completed']);
  });

  it('isolates an item the database refuses: only that request fails, the others are applied in order', async () => {
    const result = await processAllocate(
      deps(),
      job([
        { key: 'b1', questId, points: 1, address: address(1) },
        { key: 'b2', questId, points: 10, address: address(2) }, // would overflow the balance CHECK
        { key: 'b3', questId, points: 1, address: address(3) },
      ]),
    );
    expect(result.outcomes.map((o) => o.status)).toEqual(['completed', 'failed', 'completed']);
    const paid = await db.sql<
      { request_key: string }[]
    >`select request_key from payouts where request_key like 'b%' order by seq`;
    expect(paid.map((p) => p.request_key)).toEqual(['b1', 'b3']);
    const [q] = await db.sql<{ points_remaining: number }[]>`select points_remaining from quests where id = ${questId}`;
    expect(q!.points_remaining).toBe(1000 - 10 - 2);
  });

  it('replays a redelivered job (its worker died after committing) instead of crediting again', async () => {
    const items = [
      { key: 'alc_0redeliver1', questId, points: 2, address: address(1) },
      { key: 'alc_0redeliver2', questId, points: 3, address: address(3) },
    ];
    const first = await processAllocate(deps(), job(items));
    const count = async () => (await db.sql`select 1 from payouts where request_key like 'alc_0redeliver%'`).length;
    expect(await count()).toBe(2);
    const redelivered = await processAllocate(deps(), job(items, 2));
    expect(redelivered.outcomes).toEqual(first.outcomes);
    // Even if a redelivery were mistaken for a first delivery, the unique (quest, request key)
    // constraint refuses the second credit and the item-by-item path replays the stored outcome.
    const mistaken = await processAllocate(deps(), job(items, 1));
    expect(mistaken.outcomes).toEqual(first.outcomes);
    expect(await count()).toBe(2);
  });

  it('gives up after bounded retries when the database is unreachable, and answers failed', async () => {
    const dead = createSql('postgres://postgres@127.0.0.1:1/nowhere', { max: 1, connectTimeout: 1 });
    logs.length = 0;
    const started = Date.now();
    const result = await processAllocate(deps({ sql: dead }), job([{ key: 'c1', questId, points: 1, address: address(1) }]));
    expect(result.outcomes).toEqual([{ status: 'failed', code: 'ALLOCATION_FAILED' }]);
    expect(logs.filter((l) => l.includes('retrying'))).toHaveLength(2);
    expect(logs.some((l) => l.includes('giving up'))).toBe(true);
    expect(Date.now() - started).toBeLessThan(10_000);
    await dead.end({ timeout: 1 });
  });
});
