import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCampaign, startTestApp, switchFlags, type TestApp } from './helpers.ts';

let t: TestApp;
let campaignId: number;

beforeAll(async () => {
  t = await startTestApp();
  campaignId = await createCampaign(t.sql);
});
afterAll(async () => {
  await t.close();
});

const get = (id: number | string) => t.request({ method: 'GET', url: `/campaigns/${id}` });

describe('GET /campaigns/:id: errors', () => {
  it.each(['abc', '1.5', '-1', '0', '2147483648', '1e2', '01'])('answers 400 VALIDATION_FAILED for id %j', async (id) => {
    const res = await get(id);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({
      code: 'VALIDATION_FAILED',
      details: [expect.objectContaining({ location: 'params', path: 'id' })],
    });
  });

  it('answers 404 CAMPAIGN_NOT_FOUND for an unknown campaign', async () => {
    const res = await get(campaignId + 1000);
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({
      statusCode: 404,
      error: 'Not Found',
      code: 'CAMPAIGN_NOT_FOUND',
      message: 'Campaign not found.',
      requestId: res.headers['x-request-id'],
    });
  });

  it('answers 400 CAMPAIGNS_DISABLED while the campaigns feature is off, whatever the id', async () => {
    await switchFlags(t, { campaigns: false });
    try {
      for (const id of [campaignId, campaignId + 1000]) {
        const res = await get(id);
        expect(res.statusCode).toBe(400);
        expect(res.json()).toMatchObject({ code: 'CAMPAIGNS_DISABLED', message: 'The campaigns feature is disabled.' });
      }
    } finally {
      await switchFlags(t, { campaigns: true });
    }
    expect((await get(campaignId)).statusCode).toBe(200);
  });

  it('ignores the quests flag', async () => {
    await switchFlags(t, { quests: false });
    try {
      expect((await get(campaignId)).statusCode).toBe(200);
    } finally {
      await switchFlags(t, { quests: true });
    }
  });
});
