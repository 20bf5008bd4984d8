import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createApiKey,
  createCampaign,
  createOwner,
  createQuest,
  type SeededOwner,
  startTestApp,
  type TestApp,
} from './helpers.ts';

let t: TestApp;
let owner: SeededOwner;
let campaignId: number;
let publicId: number;
let privateId: number;

beforeAll(async () => {
  t = await startTestApp();
  owner = await createOwner(t.sql);
  campaignId = await createCampaign(t.sql);
  publicId = await createQuest(t.sql, { ownerId: owner.id, campaignId, name: 'Open' });
  privateId = await createQuest(t.sql, { ownerId: owner.id, campaignId, isPublic: false, name: 'Hidden launch plan' });
});
afterAll(async () => {
  await t.close();
});

describe('GET /campaigns/:id: access', () => {
  it('needs no API key and ignores one that is sent', async () => {
    const revoked = await createApiKey(t.sql, owner.id, { revoked: true });
    for (const key of [undefined, owner.apiKey, revoked, 'garbage']) {
      const res = await t.request({
        method: 'GET',
        url: `/campaigns/${campaignId}`,
        headers: key === undefined ? {} : { 'x-api-key': key },
      });
      expect(res.statusCode, String(key)).toBe(200);
    }
  });

  it("never embeds a private quest, not even for its owner's key", async () => {
    for (const headers of [{}, { 'x-api-key': owner.apiKey }]) {
      const res = await t.request({ method: 'GET', url: `/campaigns/${campaignId}`, headers });
      expect(res.json().quests.map((q: { id: number }) => q.id)).toEqual([publicId]);
      expect(res.body).not.toContain('Hidden launch plan');
      expect(res.json().quests.map((q: { id: number }) => q.id)).not.toContain(privateId);
    }
  });
});
