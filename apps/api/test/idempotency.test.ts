import { createTestRedis, type TestRedis } from '@quest/testing';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IdempotencyGuard } from '../src/services/idempotency.ts';
import {
  createAccount,
  createOwner,
  createQuest,
  randomAddress,
  type SeededOwner,
  pendingAllocator,
  startTestApp,
  type TestApp,
} from './helpers.ts';

/**
 * A reused Idempotency-Key with a different body (issue 11, item 7) is refused at once, also while
 * the first request is pending. The allocator here never decides: every allocation stays pending,
 * the case where the ledger cannot yet tell the bodies apart.
 */

let t: TestApp;
let redisServer: TestRedis;
let redis: Redis;
let owner: SeededOwner;
let questId: number;
const a = randomAddress();
const b = randomAddress();

beforeAll(async () => {
  redisServer = await createTestRedis();
  redis = new Redis(redisServer.url, { maxRetriesPerRequest: 1 });
  t = await startTestApp({
    allocator: pendingAllocator,
    idempotency: new IdempotencyGuard(redis, { prefix: redisServer.prefix, ttlMs: 60_000 }),
  });
  owner = await createOwner(t.sql);
  questId = await createQuest(t.sql, { ownerId: owner.id });
  await createAccount(t.sql, a);
  await createAccount(t.sql, b);
});
afterAll(async () => {
  await t?.close();
  redis?.disconnect();
  await redisServer?.cleanup();
});

const allocate = (key: string, body: unknown) =>
  t.request({
    method: 'POST',
    url: `/quests/${questId}`,
    payload: body as Record<string, unknown>,
    headers: { 'x-api-key': owner.apiKey, 'idempotency-key': key },
  });
const batch = (key: string, body: unknown) =>
  t.request({
    method: 'POST',
    url: `/quests/${questId}/batches`,
    payload: body as Record<string, unknown>,
    headers: { 'x-api-key': owner.apiKey, 'idempotency-key': key },
  });

describe('a reused Idempotency-Key while the first request is pending', () => {
  it('POST /quests/{id}: the same body gets the same pending id; a different body is refused', async () => {
    const first = await allocate('order-1', { address: a, points: 5 });
    expect(first.statusCode).toBe(202);
    const again = await allocate('order-1', { address: a.toLowerCase(), points: 5 });
    expect(again.statusCode).toBe(202);
    expect(again.json().allocation.id).toBe(first.json().allocation.id);
    for (const other of [
      { address: a, points: 6 },
      { address: b, points: 5 },
    ]) {
      const res = await allocate('order-1', other);
      expect(res.statusCode).toBe(400);
      expect(res.json().code).toBe('IDEMPOTENCY_KEY_REUSED');
    }
  });

  it('POST /quests/{id}/batches: a different list under the same key is refused', async () => {
    const items = [{ address: a.toLowerCase(), points: 1 }];
    expect((await batch('batch-1', { allocations: items })).statusCode).toBe(202);
    expect((await batch('batch-1', { allocations: items })).statusCode).toBe(202);
    const res = await batch('batch-1', { allocations: [{ address: a.toLowerCase(), points: 2 }] });
    expect(res.statusCode).toBe(400);
    expect(res.json().code).toBe('IDEMPOTENCY_KEY_REUSED');
  });

  it('keys are per command: the same client key on the allocation and the batch route does not clash', async () => {
    expect((await allocate('shared', { address: a, points: 1 })).statusCode).toBe(202);
    expect((await batch('shared', { allocations: [{ address: b.toLowerCase(), points: 9 }] })).statusCode).toBe(202);
  });
});
