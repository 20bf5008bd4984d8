import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOwner, createQuest, type SeededOwner, startTestApp, switchFlags, type TestApp } from './helpers.ts';

let t: TestApp;
let owner: SeededOwner;
let questId: number;

beforeAll(async () => {
  t = await startTestApp();
  owner = await createOwner(t.sql);
  questId = await createQuest(t.sql, { ownerId: owner.id });
});
afterAll(async () => {
  await t.close();
});

const get = (path: string, key = owner.apiKey) => t.request({ method: 'GET', url: path, headers: { 'x-api-key': key } });

describe('GET /quests/:questId: errors', () => {
  it.each(['abc', '1.5', '-1', '0', '2147483648', '99999999999', '1e3', '01', '0x10', '%20', '1%20'])(
    'answers 400 VALIDATION_FAILED for quest id %j',
    async (id) => {
      const res = await get(`/quests/${id}`);
      expect(res.statusCode).toBe(400);
      const body = res.json();
      expect(body).toMatchObject({ statusCode: 400, error: 'Bad Request', code: 'VALIDATION_FAILED' });
      expect(body.message).toContain('params.questId');
      expect(body.details).toEqual([expect.objectContaining({ location: 'params', path: 'questId' })]);
    },
  );

  it.each([
    ['limit=0', 'limit'],
    ['limit=101', 'limit'],
    ['limit=-1', 'limit'],
    ['limit=abc', 'limit'],
    ['limit=1.5', 'limit'],
    ['limit=', 'limit'],
    ['offset=-1', 'offset'],
    ['offset=x', 'offset'],
    ['offset=99999999999', 'offset'],
    ['limit=1&limit=2', 'limit'],
  ])('answers 400 VALIDATION_FAILED for %s', async (query, field) => {
    const res = await get(`/quests/${questId}?${query}`);
    expect(res.statusCode).toBe(400);
    const body = res.json();
    expect(body.code).toBe('VALIDATION_FAILED');
    expect(body.details).toContainEqual(expect.objectContaining({ location: 'querystring', path: field }));
  });

  it('accepts the bounds limit=1, limit=100, offset=0', async () => {
    for (const query of ['limit=1', 'limit=100', 'offset=0']) {
      expect((await get(`/quests/${questId}?${query}`)).statusCode).toBe(200);
    }
  });

  it('answers 404 QUEST_NOT_FOUND for an unknown quest, with a valid key', async () => {
    const res = await get('/quests/987654');
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({
      statusCode: 404,
      error: 'Not Found',
      code: 'QUEST_NOT_FOUND',
      message: 'Quest not found.',
      requestId: res.headers['x-request-id'],
    });
  });

  it('answers 400 QUESTS_DISABLED while the quests feature is off, and serves again once it is back on', async () => {
    await switchFlags(t, { quests: false });
    try {
      const res = await get(`/quests/${questId}`);
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({ code: 'QUESTS_DISABLED', message: 'The quests feature is disabled.' });
      // The flag is checked before the key: the feature is off for everyone.
      expect((await get(`/quests/${questId}`, 'sk_nope')).json().code).toBe('QUESTS_DISABLED');
      // The campaigns switch does not affect quests, and vice versa.
    } finally {
      await switchFlags(t, { quests: true });
    }
    expect((await get(`/quests/${questId}`)).statusCode).toBe(200);
  });

  it('ignores the campaigns flag', async () => {
    await switchFlags(t, { campaigns: false });
    try {
      expect((await get(`/quests/${questId}`)).statusCode).toBe(200);
    } finally {
      await switchFlags(t, { campaigns: true });
    }
  });

  it('validates the id before anything else (400 even without a key)', async () => {
    const res = await t.request({ method: 'GET', url: '/quests/abc' });
    expect(res.statusCode).toBe(400);
    expect(res.json().code).toBe('VALIDATION_FAILED');
  });
});
