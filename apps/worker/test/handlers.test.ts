import net from 'node:net';
import { describe, expect, vi } from 'vitest';
import { createSql, type Sql } from '@quest/db';
import { test } from '@quest/testing';
import type { AllocateJobData, JobContext } from '@quest/domain';
import { type HandlerDeps, handleAllocate } from '../src/handlers/index.ts';

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

const deps = (sql: Sql, over: Partial<HandlerDeps> = {}): HandlerDeps => ({
  sql,
  workerId: 'test-worker',
  retryBaseMs: 1,
  retryMaxMs: 20,
  attemptTimeoutMs: 5_000,
  batchChunkSize: 100,
  logger: recordingLogger().logger,
  ...over,
});
/** An allocate job's data and context, as the pool hands them to the handler. */
const job = (items: unknown[], firstDelivery = true): [AllocateJobData, JobContext] => [
  { items } as AllocateJobData,
  { id: '1', partition: 0, firstDelivery },
];
const processAllocate = (d: HandlerDeps, [data, context]: [AllocateJobData, JobContext]) => handleAllocate(d, data, context);

/** The largest balance the accounts table accepts (its CHECK), as for any JSON-safe integer. */
const MAX_BALANCE = Number.MAX_SAFE_INTEGER;

describe('handleAllocate', () => {
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

  test('rejects a credit past the balance limit on its own: the others are applied in order, nothing fails', async ({
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
    expect(result.outcomes.map((o) => (o.status === 'rejected' ? o.code : o.status))).toEqual([
      'completed',
      'BALANCE_LIMIT_EXCEEDED',
      'completed',
    ]);
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
    const replayed = first.outcomes.map((o) => ({ ...o, replayed: true }));
    const redelivered = await processAllocate(deps(database.sql), job(items, false));
    expect(redelivered.outcomes).toEqual(replayed);
    // Even if a redelivery were mistaken for a first delivery, the unique (quest, request key)
    // constraint refuses the second credit and the item-by-item path replays the stored outcome.
    const mistaken = await processAllocate(deps(database.sql), job(items, true));
    expect(mistaken.outcomes).toEqual(replayed);
    expect(await credited()).toBe(items.length);
  });

  test('waits for an unreachable database while holding its place, then applies the job once', async ({
    database,
    quest,
    accounts: [one],
  }) => {
    const dead = createSql('postgres://postgres@127.0.0.1:1/nowhere', { max: 1, connectTimeout: 1 });
    const { lines, logger } = recordingLogger();
    let current: Sql = dead;
    const d = deps(dead, { logger });
    Object.defineProperty(d, 'sql', { get: () => current });
    try {
      const result = processAllocate(d, job([{ key: 'c1', questId: quest, points: 1, address: one }]));
      // It keeps retrying (never answers failed) for as long as the database is away…
      await vi.waitFor(
        () => expect(lines.filter((l) => l === 'warn transient database error, retrying').length).toBeGreaterThan(3),
        {
          timeout: 20_000,
        },
      );
      // …and once it is back, the job is applied, exactly once.
      current = database.sql;
      const outcome = (await result).outcomes[0];
      expect(outcome?.status).toBe('completed');
      expect(lines).not.toContain('error permanent error while applying allocations');
      expect(await database.sql`select 1 from payouts where quest_id = ${quest} and request_key = 'c1'`).toHaveLength(1);
    } finally {
      await dead.end({ timeout: 1 });
    }
  });

  test('abandons a database attempt that never settles and retries it', async ({ database, quest, accounts: [one] }) => {
    // A server that accepts connections and never answers: only the attempt's time limit ends it.
    const silent = net.createServer(() => {});
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const port = (silent.address() as net.AddressInfo).port;
    const hung = createSql(`postgres://postgres@127.0.0.1:${port}/nowhere`, { max: 1, connectTimeout: 600 });
    const { lines, logger } = recordingLogger();
    let current: Sql = hung;
    const d = deps(hung, { logger, attemptTimeoutMs: 200 });
    Object.defineProperty(d, 'sql', { get: () => current });
    try {
      const result = processAllocate(d, job([{ key: 'h1', questId: quest, points: 1, address: one }]));
      await vi.waitFor(() => expect(lines).toContain('warn transient database error, retrying'), { timeout: 20_000 });
      current = database.sql;
      expect((await result).outcomes[0]?.status).toBe('completed');
    } finally {
      await hung.end({ timeout: 0 });
      silent.close();
    }
  });
});
