import { applyBatchChunk, getBatchItems, startBatch } from '@quest/db';
import type { JobReply } from '@quest/domain';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createAccount,
  createOwner,
  createQuest,
  ISO_UTC,
  randomAddress,
  type SeededOwner,
  scriptedAllocator,
  startTestApp,
  type TestApp,
} from './helpers.ts';

/**
 * POST /quests/{questId}/batches and GET …/batches/{batchId}, through the service, with the queue
 * and the worker scripted: a batch the pipeline decides at once (the ledger applies it in one chunk,
 * as a worker would), one it leaves pending, and a retry of a finished one.
 */

let t: TestApp;
let owner: SeededOwner;
let questId: number;
let known: `0x${string}`;
let mode: 'apply' | 'leave' = 'apply';

/** Apply the whole batch as one chunk with the real ledger, and reply like the worker. */
async function applyWhole({
  batchId,
  questId: quest,
}: {
  batchId: string;
  questId: number;
}): Promise<JobReply<'batch'> | undefined> {
  if (mode === 'leave') return undefined;
  await startBatch(t.sql, batchId);
  const [row] = await t.sql<{ total: number }[]>`select total from batches where id = ${batchId}`;
  const total = row!.total;
  const stored = (await getBatchItems(t.sql, batchId, 0, total))!;
  const items = stored.addresses.map((address, i) => ({
    key: `${batchId}:${i}`,
    questId: quest,
    points: stored.points[i]!,
    address,
    batchId,
    itemIndex: i,
  }));
  const outcomes = await applyBatchChunk(t.sql, { batchId, start: 0, items });
  const succeeded = outcomes.filter((o) => o.status === 'completed').length;
  return { ok: true, result: { batchId, status: 'completed', total, succeeded, failed: total - succeeded, worker: 'test' } };
}

const allocator = scriptedAllocator({ onBatch: applyWhole });

beforeAll(async () => {
  t = await startTestApp({ allocator });
  owner = await createOwner(t.sql);
  questId = await createQuest(t.sql, { ownerId: owner.id, totalPoints: 1000 });
  known = (await createAccount(t.sql, randomAddress())).address;
});
afterAll(async () => {
  await t.close();
});

const create = (allocations: object[], headers: Record<string, string> = {}) =>
  t.request({
    method: 'POST',
    url: `/quests/${questId}/batches`,
    headers: { 'x-api-key': owner.apiKey, 'content-type': 'application/json', ...headers },
    payload: { allocations },
  });

describe('POST /quests/:questId/batches', () => {
  it('answers 200 with every result in item order: payouts and rejections with the item', async () => {
    mode = 'apply';
    const unknown = randomAddress();
    const res = await create([
      { address: known.toLowerCase(), points: 5 },
      { address: unknown, points: 2 },
    ]);
    expect(res.statusCode).toBe(200);
    const { batch } = res.json();
    expect(batch).toMatchObject({ status: 'completed', total: 2, processed: 2, succeeded: 1, failed: 1 });
    expect(batch.completed_at).toMatch(ISO_UTC);
    expect(batch.results).toEqual([
      { index: 0, status: 'completed', payout: expect.objectContaining({ amount: 5, account: { pass: known } }) },
      {
        index: 1,
        status: 'rejected',
        address: unknown,
        points: 2,
        error: { code: 'ACCOUNT_NOT_FOUND', message: expect.any(String) },
      },
    ]);
  });

  it('answers 202 with a Location while undecided; Prefer: respond-async says it skipped the wait', async () => {
    mode = 'leave';
    const res = await create([{ address: known, points: 1 }], { prefer: 'respond-async' });
    expect(res.statusCode).toBe(202);
    expect(res.headers['preference-applied']).toBe('respond-async');
    const { batch } = res.json();
    expect(batch).toMatchObject({ status: 'pending', total: 1, processed: 0, completed_at: null });
    expect(batch).not.toHaveProperty('results');
    expect(res.headers.location).toBe(`/quests/${questId}/batches/${batch.id}`);
  });

  it('replays a finished batch for its Idempotency-Key without running it again', async () => {
    mode = 'apply';
    const first = await create([{ address: known, points: 3 }], { 'idempotency-key': 'import-1' });
    expect(first.statusCode).toBe(200);
    expect(first.headers).not.toHaveProperty('idempotent-replayed');
    mode = 'leave';
    const again = await create([{ address: known, points: 3 }], { 'idempotency-key': 'import-1' });
    expect(again.statusCode).toBe(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.json().batch).toEqual(first.json().batch);
  });
});

describe('GET /quests/:questId/batches/:batchId', () => {
  it('pages the results by limit and offset', async () => {
    mode = 'apply';
    const created = await create(Array.from({ length: 5 }, (_, i) => ({ address: known, points: i + 1 })));
    const { id } = created.json().batch;
    const page = await t.request({
      method: 'GET',
      url: `/quests/${questId}/batches/${id}?limit=2&offset=2`,
      headers: { 'x-api-key': owner.apiKey },
    });
    expect(page.statusCode).toBe(200);
    expect(
      page.json().batch.results.map((r: { index: number; payout: { amount: number } }) => [r.index, r.payout.amount]),
    ).toEqual([
      [2, 3],
      [3, 4],
    ]);
  });
});
