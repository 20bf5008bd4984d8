import type { Job } from 'bullmq';
import { describe, expect } from 'vitest';
import { createSql, type Sql } from '@quest/db';
import { test } from '@quest/testing';
import { processAllocate, type ProcessorDeps } from '../src/processor.ts';

/** A logger that keeps "level message" lines, one per call. */
function recordingLogger() {
  const lines: string[] = [];
  return {
    lines,
    logger: {
      warn: (_: object, msg?: string) => lines.push(`warn ${msg}`),
      error: (_: object, msg?: string) => lines.push(`error ${msg}`),
    },
  };
}

const MAX_ATTEMPTS = 3;
const deps = (sql: Sql, over: Partial<ProcessorDeps> = {}): ProcessorDeps => ({
  sql,
  workerId: 'test-worker',
  maxAttempts: MAX_ATTEMPTS,
  retryBaseMs: 1,
  batchChunkSize: 100,
  logger: recordingLogger().logger,
  ...over,
});
const job = (items: unknown[], attemptsStarted = 1) =>
  ({ id: '1', name: 'allocate', data: { items }, attemptsStarted, stalledCounter: 0 }) as unknown as Job;

/** The largest balance the accounts table accepts (its CHECK), as for any JSON-safe integer. */
const MAX_BALANCE = Number.MAX_SAFE_INTEGER;

describe('processAllocate', () => {
  test('decides every item of a coalesced job in one go', async ({ database, quest, accounts: [one, two] }) => {
    const result = await processAllocate(
      deps(database.sql),
      job([
        { key: 'a1', questId: quest, points: 5, address: one },
        { key: 'a2', questId: quest, points: 5, address: two },
      ]),
    );
    expect(result.worker).toBe('test-worker');
    expect(result.outcomes.map((o) => o.status)).toEqual(['completed', 'completed']);
  });

  test('isolates an item the database refuses: only that request fails, the others are applied in order', async ({
    database,
    makeQuest,
    accounts: [one, nearlyFull, three],
  }) => {
    const questId = await makeQuest({ totalPoints: 1000 });
    // One point short of the largest balance the database accepts.
    await database.sql`update accounts set balance = ${MAX_BALANCE - 1} where pass_address = ${nearlyFull!}`;
    const result = await processAllocate(
      deps(database.sql),
      job([
        { key: 'b1', questId, points: 1, address: one },
        { key: 'b2', questId, points: 10, address: nearlyFull }, // would overflow the balance CHECK
        { key: 'b3', questId, points: 1, address: three },
      ]),
    );
    expect(result.outcomes.map((o) => o.status)).toEqual(['completed', 'failed', 'completed']);
    const paid = await database.sql<
      { request_key: string }[]
    >`select request_key from payouts where quest_id = ${questId} order by seq`;
    expect(paid.map((p) => p.request_key)).toEqual(['b1', 'b3']);
    const [q] = await database.sql<{ points_remaining: number }[]>`select points_remaining from quests where id = ${questId}`;
    expect(q!.points_remaining).toBe(1000 - 1 - 1);
  });

  test('replays a redelivered job (its worker died after committing) instead of crediting again', async ({
    database,
    quest,
    accounts: [one, two],
  }) => {
    const items = [
      { key: 'alc_0redeliver1', questId: quest, points: 2, address: one },
      { key: 'alc_0redeliver2', questId: quest, points: 3, address: two },
    ];
    const first = await processAllocate(deps(database.sql), job(items));
    const credited = async () => (await database.sql`select 1 from payouts where quest_id = ${quest}`).length;
    expect(await credited()).toBe(items.length);
    const redelivered = await processAllocate(deps(database.sql), job(items, 2));
    expect(redelivered.outcomes).toEqual(first.outcomes);
    // Even if a redelivery were mistaken for a first delivery, the unique (quest, request key)
    // constraint refuses the second credit and the item-by-item path replays the stored outcome.
    const mistaken = await processAllocate(deps(database.sql), job(items, 1));
    expect(mistaken.outcomes).toEqual(first.outcomes);
    expect(await credited()).toBe(items.length);
  });

  test('gives up after bounded retries when the database is unreachable, and answers failed', async ({
    quest,
    accounts: [one],
  }) => {
    const dead = createSql('postgres://postgres@127.0.0.1:1/nowhere', { max: 1, connectTimeout: 1 });
    const { lines, logger } = recordingLogger();
    try {
      const result = await processAllocate(deps(dead, { logger }), job([{ key: 'c1', questId: quest, points: 1, address: one }]));
      expect(result.outcomes).toEqual([{ status: 'failed', code: 'ALLOCATION_FAILED' }]);
      // Bounded by attempts, not by time: MAX_ATTEMPTS tries, a retry between each two, then it gives up.
      expect(lines).toEqual([
        ...Array(MAX_ATTEMPTS - 1).fill('warn transient database error, retrying'),
        'error giving up after transient errors',
      ]);
    } finally {
      await dead.end({ timeout: 1 });
    }
  });
});
