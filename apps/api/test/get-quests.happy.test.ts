import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createCampaign,
  createOwner,
  createQuest,
  DAY,
  HOUR,
  ISO_UTC,
  type SeededOwner,
  startTestApp,
  type TestApp,
} from './helpers.ts';

let t: TestApp;
let alice: SeededOwner;
let bob: SeededOwner;
let campaignId: number;
const start = new Date(Date.UTC(2025, 0, 1, 8, 30, 0, 123));
const end = new Date(Date.now() + 10 * DAY);
const ids: { alicePublic: number[]; alicePrivate: number; bobPublic: number[] } = {
  alicePublic: [],
  alicePrivate: 0,
  bobPublic: [],
};

beforeAll(async () => {
  t = await startTestApp();
  alice = await createOwner(t.sql, { name: 'Alice' });
  bob = await createOwner(t.sql, { name: 'Bob' });
  campaignId = await createCampaign(t.sql, { name: 'Spring', description: 'Spring campaign' });
  ids.alicePublic.push(
    await createQuest(t.sql, {
      ownerId: alice.id,
      campaignId,
      name: 'Follow us',
      description: 'Follow the account',
      startAt: start,
      endAt: end,
      totalPoints: 5000,
      pointsRemaining: 1234,
      expectedPointsPerCompletion: 50,
    }),
  );
  ids.alicePrivate = await createQuest(t.sql, { ownerId: alice.id, campaignId, isPublic: false, name: 'Private' });
  ids.bobPublic.push(await createQuest(t.sql, { ownerId: bob.id, name: 'No campaign', startAt: start, endAt: end }));
  ids.alicePublic.push(
    // Inactive quests (past window, deactivated action) are still public quests.
    await createQuest(t.sql, { ownerId: alice.id, startAt: new Date(Date.now() - 3 * DAY), endAt: new Date(Date.now() - DAY) }),
    await createQuest(t.sql, { ownerId: alice.id, actionStatus: 'deactivated' }),
  );
});
afterAll(async () => {
  await t.close();
});

const list = async (query = '') => {
  const res = await t.request({ method: 'GET', url: `/quests${query}` });
  expect(res.statusCode).toBe(200);
  return res.json() as Record<string, unknown>[];
};

describe('GET /quests', () => {
  // Other tests add public quests of their own: these two read a page large enough for all of them
  // and look at the quests made above, so they hold in any order.
  it('answers a JSON array of the public quests, in ascending id order, private ones left out', async () => {
    const body = await list('?limit=100');
    expect(Array.isArray(body)).toBe(true);
    const listed = body.map((q) => q.id as number);
    expect(listed).toEqual([...listed].sort((a, b) => a - b));
    const seeded = new Set([...ids.alicePublic, ...ids.bobPublic, ids.alicePrivate]);
    expect(listed.filter((id) => seeded.has(id))).toEqual([...ids.alicePublic, ...ids.bobPublic].sort((a, b) => a - b));
    expect(listed).not.toContain(ids.alicePrivate);
  });

  it('answers the public list view with every field of the spec, of the right type', async () => {
    const body = await list('?limit=100');
    const withCampaign = body.find((q) => q.id === ids.alicePublic[0]);
    expect(withCampaign).toEqual({
      id: ids.alicePublic[0],
      name: 'Follow us',
      description: 'Follow the account',
      total_points: 5000,
      expected_points_per_completion: 50,
      start: '2025-01-01T08:30:00.123Z',
      end: end.toISOString(),
      campaign: { id: campaignId, name: 'Spring', description: 'Spring campaign' },
    });
    expect(Object.keys(withCampaign!)).toEqual([
      'id',
      'name',
      'description',
      'total_points',
      'expected_points_per_completion',
      'start',
      'end',
      'campaign',
    ]);
    const withoutCampaign = body.find((q) => q.id === ids.bobPublic[0]);
    expect(withoutCampaign!.campaign).toBeNull();
    for (const q of body) {
      expect(Number.isInteger(q.id)).toBe(true);
      expect(typeof q.name).toBe('string');
      expect(typeof q.description).toBe('string');
      expect(Number.isInteger(q.total_points)).toBe(true);
      expect(Number.isInteger(q.expected_points_per_completion)).toBe(true);
      expect(q.start).toMatch(ISO_UTC);
      expect(q.end).toMatch(ISO_UTC);
      // The public view carries no owner-only fields.
      expect(q).not.toHaveProperty('points_remaining');
      expect(q).not.toHaveProperty('payouts');
    }
  });

  it('filters by owner pass address in any letter case', async () => {
    const expected = [...ids.alicePublic].sort((a, b) => a - b);
    for (const address of [alice.address, alice.address.toLowerCase(), `0x${alice.address.slice(2).toUpperCase()}`]) {
      expect((await list(`?owner=${address}`)).map((q) => q.id)).toEqual(expected);
    }
    expect((await list(`?owner=${bob.address}`)).map((q) => q.id)).toEqual(ids.bobPublic);
  });

  it('answers [] for an owner without public quests and for an address nobody owns', async () => {
    const carol = await createOwner(t.sql);
    await createQuest(t.sql, { ownerId: carol.id, isPublic: false });
    expect(await list(`?owner=${carol.address}`)).toEqual([]);
    expect(await list(`?owner=0x${'1'.repeat(40)}`)).toEqual([]);
  });

  it('pages with limit and offset over the id order', async () => {
    const dave = await createOwner(t.sql);
    const daveIds: number[] = [];
    for (let i = 0; i < 45; i++)
      daveIds.push(await createQuest(t.sql, { ownerId: dave.id, name: `Q${i}`, startAt: new Date(Date.now() - HOUR) }));
    const page = async (q: string) => (await list(`?owner=${dave.address}&${q}`)).map((x) => x.id);
    expect(await page('')).toEqual(daveIds.slice(0, 20));
    expect(await page('offset=20')).toEqual(daveIds.slice(20, 40));
    expect(await page('offset=40')).toEqual(daveIds.slice(40));
    expect(await page('offset=45')).toEqual([]);
    expect(await page('limit=100')).toEqual(daveIds);
    expect(await page('limit=5&offset=7')).toEqual(daveIds.slice(7, 12));
    const all = await list('?limit=100');
    expect(all.map((q) => q.id)).toEqual([...all.map((q) => q.id as number)].sort((a, b) => a - b));
  });
});
