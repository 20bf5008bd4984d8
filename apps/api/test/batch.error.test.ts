import { failBatch } from '@quest/db';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createOwner,
  createQuest,
  randomAddress,
  type SeededOwner,
  scriptedAllocator,
  startTestApp,
  type TestApp,
} from './helpers.ts';

/** The batch routes: bad input, a batch over the limit, a reused Idempotency-Key, a batch that stopped. */

let t: TestApp;
let owner: SeededOwner;
let questId: number;
let failNext = false;
const allocator = scriptedAllocator({
  onBatch: async ({ batchId }) => {
    if (!failNext) return undefined;
    await failBatch(t.sql, batchId);
    return { ok: true, result: { batchId, status: 'failed', total: 2, succeeded: 0, failed: 0, worker: 'test' } };
  },
});

beforeAll(async () => {
  t = await startTestApp({ allocator, env: { BATCH_MAX_ITEMS: '3' } });
  owner = await createOwner(t.sql);
  questId = await createQuest(t.sql, { ownerId: owner.id });
});
afterAll(async () => {
  await t.close();
});

const create = (payload: unknown, headers: Record<string, string> = {}) =>
  t.request({
    method: 'POST',
    url: `/quests/${questId}/batches`,
    headers: { 'x-api-key': owner.apiKey, 'content-type': 'application/json', ...headers },
    payload: payload as string,
  });
const item = () => ({ address: randomAddress(), points: 1 });

describe('POST /quests/:questId/batches: errors', () => {
  it.each([
    [{ allocations: [] }, 'allocations'],
    [{ allocations: [{ address: '0x12', points: 1 }] }, 'allocations.0.address'],
    [
      {
        allocations: [
          { address: randomAddress(), points: 1 },
          { address: randomAddress(), points: -1 },
        ],
      },
      'allocations.1.points',
    ],
    [{}, 'allocations'],
  ])('answers 400 VALIDATION_FAILED for %j, naming the item', async (body, path) => {
    const res = await create(body);
    expect(res.statusCode).toBe(400);
    expect(res.json().code).toBe('VALIDATION_FAILED');
    expect(res.json().details.map((d: { path: string }) => d.path)).toContain(path);
  });

  it('answers 400 BATCH_TOO_LARGE over BATCH_MAX_ITEMS, storing nothing', async () => {
    const res = await create({ allocations: [item(), item(), item(), item()] });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({
      code: 'BATCH_TOO_LARGE',
      message: 'A batch holds at most 3 allocations; this one has 4.',
    });
    expect(await t.sql`select 1 from batches where quest_id = ${questId}`).toHaveLength(0);
  });

  it('answers 400 IDEMPOTENCY_KEY_REUSED for a key sent again with other items, telling the stored size', async () => {
    const first = await create({ allocations: [item()] }, { 'idempotency-key': 'file-1' });
    expect(first.statusCode).toBe(202);
    const res = await create({ allocations: [item(), item()] }, { 'idempotency-key': 'file-1' });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ code: 'IDEMPOTENCY_KEY_REUSED', details: { total: 1 } });
  });

  it('answers a batch that stopped 503 ALLOCATION_FAILED, saying how far it got', async () => {
    failNext = true;
    try {
      const res = await create({ allocations: [item(), item()] });
      expect(res.statusCode).toBe(503);
      expect(res.json()).toMatchObject({ code: 'ALLOCATION_FAILED', details: { processed: 0 } });
      expect(res.json().message).toMatch(/stopped after 0 of 2 items; retry with the same Idempotency-Key/);
    } finally {
      failNext = false;
    }
  });
});

describe('GET /quests/:questId/batches/:batchId: errors', () => {
  it.each(['nope', 'bat_', 'bat_x?limit=0', 'bat_x?limit=1001', 'bat_x?offset=-1'])('answers 400 for %s', async (tail) => {
    const res = await t.request({
      method: 'GET',
      url: `/quests/${questId}/batches/${tail}`,
      headers: { 'x-api-key': owner.apiKey },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().code).toBe('VALIDATION_FAILED');
  });

  it('answers 404 BATCH_NOT_FOUND for an unknown batch', async () => {
    const res = await t.request({
      method: 'GET',
      url: `/quests/${questId}/batches/bat_01jf8q4g0x7m3r6v2k9d1n5btb`,
      headers: { 'x-api-key': owner.apiKey },
    });
    expect(res.statusCode).toBe(404);
    expect(res.json().code).toBe('BATCH_NOT_FOUND');
  });
});
