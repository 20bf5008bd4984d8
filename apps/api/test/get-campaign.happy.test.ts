import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createCampaign,
  createOwner,
  createQuest,
  DAY,
  ISO_UTC,
  type SeededOwner,
  startTestApp,
  type TestApp,
} from './helpers.ts';

let t: TestApp;
let alice: SeededOwner;
let bob: SeededOwner;
let campaignId: number;
let questIds: number[];
const start = new Date(Date.UTC(2025, 2, 1));
const end = new Date(Date.UTC(2030, 2, 1, 23, 59, 59, 999));

beforeAll(async () => {
  t = await startTestApp();
  alice = await createOwner(t.sql);
  bob = await createOwner(t.sql);
  campaignId = await createCampaign(t.sql, {
    name: 'Launch week',
    description: 'Everything about the launch',
    startAt: start,
    endAt: end,
    externalAppId: 'app_futureverse_42',
  });
  // Microsecond timestamps: the API answers them at millisecond precision.
  await t.sql`update campaigns set created_at = '2025-02-01T10:11:12.345678Z', updated_at = '2025-02-03T04:05:06.789123Z' where id = ${campaignId}`;
  questIds = [
    await createQuest(t.sql, {
      ownerId: alice.id,
      campaignId,
      name: 'Mint',
      description: 'Mint a pass',
      startAt: start,
      endAt: end,
      totalPoints: 700,
      expectedPointsPerCompletion: 7,
    }),
    await createQuest(t.sql, { ownerId: bob.id, campaignId, name: 'Share', actionStatus: 'deactivated' }),
  ];
  await createQuest(t.sql, { ownerId: alice.id, campaignId: null, name: 'Elsewhere' });
});
afterAll(async () => {
  await t.close();
});

const get = (id: number | string) => t.request({ method: 'GET', url: `/campaigns/${id}` });

describe('GET /campaigns/:id', () => {
  it('answers the campaign with every field of the spec, of the right type', async () => {
    const res = await get(campaignId);
    expect(res.statusCode).toBe(200);
    const body = res.json();
    const [mint] = await t.sql<
      { created_at: Date; updated_at: Date }[]
    >`select created_at, updated_at from quests where id = ${questIds[0]!}`;
    expect(body).toEqual({
      id: campaignId,
      created_at: '2025-02-01T10:11:12.345Z',
      updated_at: '2025-02-03T04:05:06.789Z',
      name: 'Launch week',
      description: 'Everything about the launch',
      start: start.toISOString(),
      end: '2030-03-01T23:59:59.999Z',
      is_active: true,
      external_app_id: 'app_futureverse_42',
      quests: [
        {
          id: questIds[0],
          name: 'Mint',
          created_at: mint!.created_at.toISOString(),
          updated_at: mint!.updated_at.toISOString(),
          description: 'Mint a pass',
          start: start.toISOString(),
          end: end.toISOString(),
          is_public: true,
          total_points: 700,
          expected_points_per_completion: 7,
          owner_id: alice.id,
          campaign_id: campaignId,
        },
        expect.objectContaining({ id: questIds[1], name: 'Share', owner_id: bob.id, campaign_id: campaignId }),
      ],
    });
    expect(Object.keys(body)).toEqual([
      'id',
      'created_at',
      'updated_at',
      'name',
      'description',
      'start',
      'end',
      'is_active',
      'external_app_id',
      'quests',
    ]);
    expect(body.created_at).toMatch(ISO_UTC);
    expect(body.updated_at).toMatch(ISO_UTC);
    for (const q of body.quests) {
      expect(Object.keys(q)).toEqual([
        'id',
        'name',
        'created_at',
        'updated_at',
        'description',
        'start',
        'end',
        'is_public',
        'total_points',
        'expected_points_per_completion',
        'owner_id',
        'campaign_id',
      ]);
      expect(Number.isInteger(q.id)).toBe(true);
      for (const f of ['created_at', 'updated_at', 'start', 'end']) expect(q[f]).toMatch(ISO_UTC);
      expect(q.is_public).toBe(true);
      expect(q.owner_id).toMatch(/^own_/);
      expect(Number.isInteger(q.campaign_id)).toBe(true);
    }
  });

  it('answers external_app_id null when no application is linked, and the stored is_active', async () => {
    const id = await createCampaign(t.sql, { externalAppId: null, isActive: false });
    const body = (await get(id)).json();
    expect(body.external_app_id).toBeNull();
    expect(body.is_active).toBe(false);
    expect(body.quests).toEqual([]);
  });

  it('lists embedded quests in ascending id order', async () => {
    const id = await createCampaign(t.sql, { startAt: new Date(Date.now() - DAY) });
    const created: number[] = [];
    for (let i = 0; i < 5; i++) created.push(await createQuest(t.sql, { ownerId: alice.id, campaignId: id }));
    expect((await get(id)).json().quests.map((q: { id: number }) => q.id)).toEqual(created);
  });
});
