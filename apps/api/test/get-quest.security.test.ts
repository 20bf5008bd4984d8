import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createApiKey,
  createOwner,
  createQuest,
  LogCapture,
  revokeApiKey,
  type SeededOwner,
  startTestApp,
  type TestApp,
} from './helpers.ts';

let t: TestApp;
const logs = new LogCapture();
let owner: SeededOwner;
let other: SeededOwner;
let questId: number;
let otherQuestId: number;

beforeAll(async () => {
  t = await startTestApp({ logs });
  owner = await createOwner(t.sql);
  other = await createOwner(t.sql);
  questId = await createQuest(t.sql, { ownerId: owner.id });
  otherQuestId = await createQuest(t.sql, { ownerId: other.id });
});
afterAll(async () => {
  await t.close();
});

const get = (path: string, headers: Record<string, string | string[]> = {}) => t.request({ method: 'GET', url: path, headers });

async function expect401(res: Awaited<ReturnType<typeof get>>, code: 'INVALID_API_KEY' | 'NOT_QUEST_OWNER') {
  expect(res.statusCode).toBe(401);
  const body = res.json();
  expect(body).toEqual({
    statusCode: 401,
    error: 'Unauthorized',
    code,
    message: expect.any(String),
    requestId: res.headers['x-request-id'],
  });
  // Nothing of the quest leaks into an unauthorized answer.
  expect(res.body).not.toContain('total_points');
}

describe('GET /quests/:questId: API key', () => {
  it('answers 401 INVALID_API_KEY without a key', async () => {
    await expect401(await get(`/quests/${questId}`), 'INVALID_API_KEY');
  });

  it.each([
    '',
    'sk_',
    'sk_short',
    `pk_${'a'.repeat(43)}`,
    `SK_${'a'.repeat(43)}`,
    `sk_${'a'.repeat(200)}`,
    `sk_${'a'.repeat(20)} `,
    `sk_${'a'.repeat(20)}'; drop table quests; --`,
  ])('answers 401 INVALID_API_KEY for the malformed key %j', async (key) => {
    await expect401(await get(`/quests/${questId}`, { 'x-api-key': key }), 'INVALID_API_KEY');
  });

  it('answers 401 INVALID_API_KEY for a well-formed key nobody holds', async () => {
    await expect401(await get(`/quests/${questId}`, { 'x-api-key': `sk_${'A'.repeat(43)}` }), 'INVALID_API_KEY');
  });

  it('answers 401 INVALID_API_KEY for a revoked key, and keeps serving the owner through another key', async () => {
    const spare = await createApiKey(t.sql, owner.id);
    const revoked = await createApiKey(t.sql, owner.id, { revoked: true });
    await expect401(await get(`/quests/${questId}`, { 'x-api-key': revoked }), 'INVALID_API_KEY');
    expect((await get(`/quests/${questId}`, { 'x-api-key': spare })).statusCode).toBe(200);
    await revokeApiKey(t.sql, spare);
    await expect401(await get(`/quests/${questId}`, { 'x-api-key': spare }), 'INVALID_API_KEY');
  });

  it("answers 401 NOT_QUEST_OWNER for another owner's key", async () => {
    await expect401(await get(`/quests/${questId}`, { 'x-api-key': other.apiKey }), 'NOT_QUEST_OWNER');
    await expect401(await get(`/quests/${otherQuestId}`, { 'x-api-key': owner.apiKey }), 'NOT_QUEST_OWNER');
    expect((await get(`/quests/${otherQuestId}`, { 'x-api-key': other.apiKey })).statusCode).toBe(200);
  });

  it('checks the key before the quest: a bad key gets 401 even for a quest that does not exist', async () => {
    await expect401(await get('/quests/424242'), 'INVALID_API_KEY');
    await expect401(await get('/quests/424242', { 'x-api-key': `sk_${'B'.repeat(43)}` }), 'INVALID_API_KEY');
    const res = await get('/quests/424242', { 'x-api-key': other.apiKey });
    expect(res.statusCode).toBe(404);
    expect(res.json().code).toBe('QUEST_NOT_FOUND');
  });

  it('treats a repeated x-api-key header as invalid', async () => {
    await expect401(await get(`/quests/${questId}`, { 'x-api-key': [owner.apiKey, owner.apiKey] }), 'INVALID_API_KEY');
  });

  it('never writes an API key to the logs', async () => {
    const before = logs.raw.length;
    await get(`/quests/${questId}`, { 'x-api-key': owner.apiKey });
    await get(`/quests/${questId}`, { 'x-api-key': other.apiKey });
    await get('/quests/abc', { 'x-api-key': owner.apiKey });
    await get('/no/such/route', { 'x-api-key': owner.apiKey });
    const written = logs.raw.slice(before).join('\n');
    expect(written.length).toBeGreaterThan(0);
    for (const key of [owner.apiKey, other.apiKey]) {
      expect(written).not.toContain(key);
      expect(written).not.toContain(key.slice(3));
    }
    expect(logs.text).not.toContain(owner.apiKey);
  });

  it('logs one line per request with its request id, route, status and latency', async () => {
    const before = logs.raw.length;
    const res = await get(`/quests/${questId}`, { 'x-api-key': owner.apiKey, 'x-request-id': 'trace-123' });
    expect(res.headers['x-request-id']).toBe('trace-123');
    const lines = logs.lines.slice(before);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      reqId: 'trace-123',
      method: 'GET',
      route: '/quests/:questId',
      url: `/quests/${questId}`,
      statusCode: 200,
      msg: 'request completed',
      level: 30,
    });
    expect(typeof lines[0]!.responseTimeMs).toBe('number');
  });
});
