import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOwner, createQuest, startTestApp, switchFlags, type TestApp } from './helpers.ts';

let t: TestApp;

beforeAll(async () => {
  t = await startTestApp();
  const owner = await createOwner(t.sql);
  await createQuest(t.sql, { ownerId: owner.id });
});
afterAll(async () => {
  await t.close();
});

describe('GET /quests: errors', () => {
  it.each([
    '0x123',
    `${'a'.repeat(40)}`,
    `0x${'g'.repeat(40)}`,
    `0x${'a'.repeat(41)}`,
    `0X${'a'.repeat(40)}`,
    ` 0x${'a'.repeat(40)}`,
    '',
  ])('answers 400 VALIDATION_FAILED for the owner %j', async (owner) => {
    const res = await t.request({ method: 'GET', url: `/quests?owner=${encodeURIComponent(owner)}` });
    expect(res.statusCode).toBe(400);
    const body = res.json();
    expect(body.code).toBe('VALIDATION_FAILED');
    expect(body.details).toContainEqual(expect.objectContaining({ location: 'querystring', path: 'owner' }));
  });

  it.each(['limit=0', 'limit=101', 'limit=x', 'offset=-1', 'offset=1.5'])('answers 400 VALIDATION_FAILED for %s', async (q) => {
    const res = await t.request({ method: 'GET', url: `/quests?${q}` });
    expect(res.statusCode).toBe(400);
    expect(res.json().code).toBe('VALIDATION_FAILED');
  });

  it('answers 400 QUESTS_DISABLED while the quests feature is off', async () => {
    await switchFlags(t, { quests: false });
    try {
      const res = await t.request({ method: 'GET', url: '/quests' });
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({ statusCode: 400, error: 'Bad Request', code: 'QUESTS_DISABLED' });
    } finally {
      await switchFlags(t, { quests: true });
    }
    expect((await t.request({ method: 'GET', url: '/quests' })).statusCode).toBe(200);
  });
});
