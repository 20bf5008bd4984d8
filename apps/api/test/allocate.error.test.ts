import { DomainError } from '@quest/domain';
import type { Delivery } from '@quest/queue';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createAccount,
  createOwner,
  createQuest,
  randomAddress,
  type SeededOwner,
  scriptedAllocator,
  startTestApp,
  switchFlags,
  type TestApp,
} from './helpers.ts';

/** POST /quests/{questId} and its status route: bad input, rejections, failures, an unavailable queue. */

let t: TestApp;
let owner: SeededOwner;
let questId: number;
let address: `0x${string}`;
let next: () => Promise<Delivery>;
const allocator = scriptedAllocator({ onAllocate: () => next() });

beforeAll(async () => {
  t = await startTestApp({ allocator });
  owner = await createOwner(t.sql);
  questId = await createQuest(t.sql, { ownerId: owner.id });
  address = (await createAccount(t.sql, randomAddress())).address;
});
afterAll(async () => {
  await t.close();
});

const allocate = (payload: unknown, headers: Record<string, string> = {}) =>
  t.request({
    method: 'POST',
    url: `/quests/${questId}`,
    headers: { 'x-api-key': owner.apiKey, 'content-type': 'application/json', ...headers },
    payload: payload as string,
  });

describe('POST /quests/:questId: errors', () => {
  it.each([
    [{ points: 0, address: '0x52908400098527886E0F7030069857D2E4169EE7' }, 'points'],
    [{ points: 1.5, address: '0x52908400098527886E0F7030069857D2E4169EE7' }, 'points'],
    [{ points: 1, address: '0x1234' }, 'address'],
    [{ points: 1 }, 'address'],
    [{ points: 1, address: '0x52908400098527886E0F7030069857D2E4169EE7', extra: true }, ''],
  ])('answers 400 VALIDATION_FAILED for %j, queueing nothing', async (body, path) => {
    const before = allocator.items.length;
    const res = await allocate(body);
    expect(res.statusCode).toBe(400);
    expect(res.json().code).toBe('VALIDATION_FAILED');
    if (path) expect(JSON.stringify(res.json().details)).toContain(path);
    expect(allocator.items.length).toBe(before);
  });

  it.each([
    [1e20, 'Too big: expected int to be <=9007199254740991'],
    [-1e20, 'Too small: expected number to be >=1'],
  ])('names one problem once for points %d: the bound that binds', async (points, message) => {
    const res = await allocate({ points, address: '0x52908400098527886E0F7030069857D2E4169EE7' });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ code: 'VALIDATION_FAILED', message: `Invalid request: body.points: ${message}` });
    expect(res.json().details).toEqual([{ location: 'body', path: 'points', code: expect.any(String), message }]);
  });

  it('answers 400 UNSUPPORTED_MEDIA_TYPE for a body that is not JSON', async () => {
    const res = await t.request({
      method: 'POST',
      url: `/quests/${questId}`,
      headers: { 'x-api-key': owner.apiKey, 'content-type': 'text/plain' },
      payload: 'points=1',
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().code).toBe('UNSUPPORTED_MEDIA_TYPE');
  });

  it.each([
    'QUEST_NOT_ACTIVE',
    'ACTION_TYPE_INACTIVE',
    'INSUFFICIENT_POINTS',
    'ACCOUNT_NOT_FOUND',
    'BALANCE_LIMIT_EXCEEDED',
  ] as const)('answers a %s decision 400 with its code and no replay mark', async (code) => {
    next = async () => ({ kind: 'decided', outcome: { status: 'rejected', code } });
    const res = await allocate({ points: 1, address });
    expect(res.statusCode).toBe(400);
    expect(res.json().code).toBe(code);
    expect(res.headers).not.toHaveProperty('idempotent-replayed');
  });

  it('answers a failed job 503 ALLOCATION_FAILED with Retry-After (nothing applied: retry with the same key)', async () => {
    next = async () => ({ kind: 'failed' });
    const res = await allocate({ points: 1, address });
    expect(res.statusCode).toBe(503);
    expect(res.json().code).toBe('ALLOCATION_FAILED');
    expect(res.headers['retry-after']).toBeDefined();
  });

  it('answers 503 QUEUE_UNAVAILABLE when the queue refuses the job, and writes no marker', async () => {
    next = async () => {
      throw new DomainError('QUEUE_UNAVAILABLE');
    };
    const res = await allocate({ points: 1, address }, { 'idempotency-key': 'queue-down' });
    expect(res.statusCode).toBe(503);
    expect(res.json().code).toBe('QUEUE_UNAVAILABLE');
    const key = allocator.items.at(-1)!.key;
    expect(await t.sql`select 1 from allocation_requests where request_key = ${key}`).toHaveLength(0);
  });

  it('answers 400 QUESTS_DISABLED while the quests feature is off, before looking at the key', async () => {
    await switchFlags(t, { quests: false });
    try {
      const res = await allocate({ points: 1, address }, { 'x-api-key': 'sk_nope' });
      expect(res.statusCode).toBe(400);
      expect(res.json().code).toBe('QUESTS_DISABLED');
    } finally {
      await switchFlags(t, { quests: true });
    }
  });
});

describe('GET /quests/:questId/allocations/:allocationId: errors', () => {
  it.each(['nope', 'alc_', 'bat_x:01', 'bat_x:-1', `alc_${'a'.repeat(300)}`])('answers 400 for the id %s', async (id) => {
    const res = await t.request({
      method: 'GET',
      url: `/quests/${questId}/allocations/${id}`,
      headers: { 'x-api-key': owner.apiKey },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().code).toBe('VALIDATION_FAILED');
  });

  it('answers 404 ALLOCATION_NOT_FOUND for an id it never saw', async () => {
    const res = await t.request({
      method: 'GET',
      url: `/quests/${questId}/allocations/alc_01jf8q4g0x7m3r6v2k9d1n5bta`,
      headers: { 'x-api-key': owner.apiKey },
    });
    expect(res.statusCode).toBe(404);
    expect(res.json().code).toBe('ALLOCATION_NOT_FOUND');
  });
});
