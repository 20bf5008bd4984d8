import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createAccount,
  createOwner,
  createPayouts,
  createQuest,
  DAY,
  HOUR,
  ISO_UTC,
  type SeededOwner,
  type SeededPayout,
  startTestApp,
  type TestApp,
} from './helpers.ts';

let t: TestApp;
let owner: SeededOwner;
let questId: number;
let payouts: SeededPayout[];
const start = new Date(Date.now() - 2 * HOUR);
const end = new Date(Date.now() + 3 * DAY);

beforeAll(async () => {
  t = await startTestApp();
  owner = await createOwner(t.sql);
  questId = await createQuest(t.sql, {
    ownerId: owner.id,
    name: 'Daily check-in',
    description: 'Check in once a day',
    startAt: start,
    endAt: end,
    totalPoints: 100_000,
    expectedPointsPerCompletion: 25,
  });
  // 45 payouts to two accounts; created_at runs backwards in time so only seq can give the order.
  const a = await createAccount(t.sql);
  const b = await createAccount(t.sql);
  payouts = [];
  for (let i = 0; i < 45; i++) {
    const [p] = await createPayouts(t.sql, questId, i % 2 ? b : a, [i + 1], () => new Date(Date.UTC(2025, 5, 1) - i * 60_000));
    payouts.push(p!);
  }
});
afterAll(async () => {
  await t.close();
});

const get = (path: string, key = owner.apiKey) => t.request({ method: 'GET', url: path, headers: { 'x-api-key': key } });
const newestFirst = () => [...payouts].reverse();
const view = (p: SeededPayout) => ({
  id: p.id,
  amount: p.amount,
  created_at: p.createdAt.toISOString(),
  account: { pass: p.pass },
});

describe('GET /quests/:questId', () => {
  it('answers the detail view with every field of the spec, of the right type', async () => {
    const res = await get(`/quests/${questId}`);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    const body = res.json();
    const spent = (45 * 46) / 2;
    expect(body).toEqual({
      id: questId,
      name: 'Daily check-in',
      description: 'Check in once a day',
      total_points: 100_000,
      points_remaining: 100_000 - spent,
      start: start.toISOString(),
      end: end.toISOString(),
      is_active: true,
      payouts: newestFirst().slice(0, 20).map(view),
    });
    expect(Object.keys(body)).toEqual([
      'id',
      'name',
      'description',
      'total_points',
      'points_remaining',
      'start',
      'end',
      'is_active',
      'payouts',
    ]);
    expect(body.start).toMatch(ISO_UTC);
    expect(body.end).toMatch(ISO_UTC);
    for (const p of body.payouts) {
      expect(Object.keys(p)).toEqual(['id', 'amount', 'created_at', 'account']);
      expect(p.id).toMatch(/^pay_[0-9a-z]{26}$/);
      expect(Number.isInteger(p.amount)).toBe(true);
      expect(p.created_at).toMatch(ISO_UTC);
      expect(Object.keys(p.account)).toEqual(['pass']);
      expect(p.account.pass).toMatch(/^0x[0-9a-fA-F]{40}$/);
    }
  });

  it('pages payouts newest first: limit/offset windows over 45 payouts', async () => {
    const all = newestFirst().map(view);
    const page = async (query: string) => (await get(`/quests/${questId}?${query}`)).json().payouts;
    expect(await page('limit=20&offset=0')).toEqual(all.slice(0, 20));
    expect(await page('limit=20&offset=20')).toEqual(all.slice(20, 40));
    expect(await page('limit=20&offset=40')).toEqual(all.slice(40, 45));
    expect(await page('limit=20&offset=45')).toEqual([]);
    expect(await page('offset=1000')).toEqual([]);
    expect(await page('limit=1')).toEqual(all.slice(0, 1));
    expect(await page('limit=7&offset=3')).toEqual(all.slice(3, 10));
    expect(await page('limit=100')).toEqual(all);
    // The windows tile the whole list without gaps or overlaps.
    const tiles: unknown[] = [];
    for (let offset = 0; offset < 45; offset += 8) tiles.push(...(await page(`limit=8&offset=${offset}`)));
    expect(tiles).toEqual(all);
  });

  it('defaults limit to 20 and offset to 0', async () => {
    const body = (await get(`/quests/${questId}`)).json();
    expect(body.payouts).toHaveLength(20);
    expect(body.payouts[0].amount).toBe(45);
  });

  it('answers a quest without payouts with an empty array and its full budget', async () => {
    const id = await createQuest(t.sql, { ownerId: owner.id, totalPoints: 500 });
    const body = (await get(`/quests/${id}`)).json();
    expect(body.payouts).toEqual([]);
    expect(body.total_points).toBe(500);
    expect(body.points_remaining).toBe(500);
  });

  it('is_active: inside [start, end) with an active action type only', async () => {
    const now = Date.now();
    const cases = [
      { startAt: new Date(now - HOUR), endAt: new Date(now + HOUR), actionStatus: 'active' as const, active: true },
      { startAt: new Date(now + HOUR), endAt: new Date(now + 2 * HOUR), actionStatus: 'active' as const, active: false },
      { startAt: new Date(now - 2 * HOUR), endAt: new Date(now - HOUR), actionStatus: 'active' as const, active: false },
      { startAt: new Date(now - HOUR), endAt: new Date(now + HOUR), actionStatus: 'deactivated' as const, active: false },
      // end is exclusive: a window that ended a moment ago is over.
      { startAt: new Date(now - HOUR), endAt: new Date(now - 1), actionStatus: 'active' as const, active: false },
    ];
    for (const c of cases) {
      const id = await createQuest(t.sql, { ownerId: owner.id, ...c });
      const body = (await get(`/quests/${id}`)).json();
      expect(body.is_active, JSON.stringify(c)).toBe(c.active);
      expect(body.start).toBe(c.startAt.toISOString());
      expect(body.end).toBe(c.endAt.toISOString());
    }
  });

  it('serves private quests to their owner', async () => {
    const id = await createQuest(t.sql, { ownerId: owner.id, isPublic: false, name: 'Secret' });
    const res = await get(`/quests/${id}`);
    expect(res.statusCode).toBe(200);
    expect(res.json().name).toBe('Secret');
  });

  it('handles large budgets exactly (bigint columns up to 2^53-1)', async () => {
    const id = await createQuest(t.sql, { ownerId: owner.id, totalPoints: Number.MAX_SAFE_INTEGER });
    const body = (await get(`/quests/${id}`)).json();
    expect(body.total_points).toBe(Number.MAX_SAFE_INTEGER);
    expect(body.points_remaining).toBe(Number.MAX_SAFE_INTEGER);
  });

  it('ignores unknown query parameters', async () => {
    const res = await get(`/quests/${questId}?foo=bar&limit=2`);
    expect(res.statusCode).toBe(200);
    expect(res.json().payouts).toHaveLength(2);
  });

  it('accepts the largest 32-bit id (and answers 404 for it)', async () => {
    const res = await get('/quests/2147483647');
    expect(res.statusCode).toBe(404);
    expect(res.json().code).toBe('QUEST_NOT_FOUND');
  });
});
