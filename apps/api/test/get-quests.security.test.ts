import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey, createOwner, createQuest, type SeededOwner, startTestApp, type TestApp } from './helpers.ts';

let t: TestApp;
let owner: SeededOwner;
let publicId: number;
let privateId: number;

beforeAll(async () => {
  t = await startTestApp();
  owner = await createOwner(t.sql);
  publicId = await createQuest(t.sql, { ownerId: owner.id });
  privateId = await createQuest(t.sql, { ownerId: owner.id, isPublic: false });
});
afterAll(async () => {
  await t.close();
});

describe('GET /quests: access', () => {
  it('needs no API key, and ignores one that is sent, whatever it is', async () => {
    const revoked = await createApiKey(t.sql, owner.id, { revoked: true });
    const expected = [publicId];
    for (const key of [undefined, owner.apiKey, revoked, 'sk_unknown_unknown_unknown', 'garbage']) {
      const res = await t.request({ method: 'GET', url: '/quests', headers: key === undefined ? {} : { 'x-api-key': key } });
      expect(res.statusCode, String(key)).toBe(200);
      expect(res.json().map((q: { id: number }) => q.id)).toEqual(expected);
    }
  });

  it("never lists a private quest, not even to its owner's key or when filtering by its owner", async () => {
    const res = await t.request({
      method: 'GET',
      url: `/quests?owner=${owner.address}&limit=100`,
      headers: { 'x-api-key': owner.apiKey },
    });
    expect(res.json().map((q: { id: number }) => q.id)).not.toContain(privateId);
  });

  it('treats the owner filter as data, not SQL', async () => {
    const res = await t.request({ method: 'GET', url: `/quests?owner=${encodeURIComponent("0x' or 1=1 --")}` });
    expect(res.statusCode).toBe(400);
  });
});
