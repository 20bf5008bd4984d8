import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertEvents, publishEvents } from '@quest/db';
import { type EventRow, newId } from '@quest/domain';
import { createOwner, type SeededOwner, startTestApp, type TestApp } from './helpers.ts';

let t: TestApp;
let alice: SeededOwner;
let bob: SeededOwner;
const aliceIds: string[] = [];

const event = (ownerId: string, type: EventRow['type'], n: number): EventRow => ({
  id: newId('evt'),
  ownerId,
  type,
  questId: 7,
  allocationId: `alc_${n}`,
  batchId: null,
  data: { n },
  createdAt: new Date(),
});

beforeAll(async () => {
  t = await startTestApp();
  alice = await createOwner(t.sql);
  bob = await createOwner(t.sql);
  const rows: EventRow[] = [];
  for (let n = 0; n < 5; n++) rows.push(event(alice.id, n === 3 ? 'quest.budget_low' : 'payout.created', n));
  rows.push(event(bob.id, 'payout.created', 99));
  await insertEvents(t.sql, rows);
  while ((await publishEvents(t.sql, 100)).published > 0);
  aliceIds.push(...rows.filter((r) => r.ownerId === alice.id).map((r) => r.id));
});
afterAll(async () => t?.close());

const list = (key: string, query = '') => t.request({ method: 'GET', url: `/events${query}`, headers: { 'x-api-key': key } });

describe('GET /events', () => {
  it("answers the owner's events only, in order, in pages resumable with after", async () => {
    const all = await list(alice.apiKey);
    expect(all.statusCode).toBe(200);
    expect(all.json().events.map((e: { id: string }) => e.id)).toEqual(aliceIds);
    expect(all.json().has_more).toBe(false);
    expect(all.json().events[0]).toEqual({
      id: aliceIds[0],
      type: 'payout.created',
      created_at: expect.stringMatching(/Z$/),
      quest_id: 7,
      allocation_id: 'alc_0',
      batch_id: null,
      data: { n: 0 },
    });
    const first = await list(alice.apiKey, '?limit=2');
    expect(first.json()).toMatchObject({ has_more: true });
    expect(first.json().events.map((e: { id: string }) => e.id)).toEqual(aliceIds.slice(0, 2));
    const rest = await list(alice.apiKey, `?after=${aliceIds[1]}&limit=10`);
    expect(rest.json().events.map((e: { id: string }) => e.id)).toEqual(aliceIds.slice(2));
    const bobs = await list(bob.apiKey);
    expect(bobs.json().events).toHaveLength(1);
  });

  it('filters by type', async () => {
    const low = await list(alice.apiKey, '?type=quest.budget_low');
    expect(low.json().events.map((e: { id: string }) => e.id)).toEqual([aliceIds[3]]);
    const both = await list(alice.apiKey, '?type=quest.budget_low,batch.completed');
    expect(both.json().events).toHaveLength(1);
  });

  it("refuses a bad or another owner's cursor, an unknown type and a bad limit with 400", async () => {
    const bobsId = (await list(bob.apiKey)).json().events[0].id;
    const cases: [string, string][] = [
      [`?after=${bobsId}`, 'EVENT_CURSOR_NOT_FOUND'],
      [`?after=${newId('evt')}`, 'EVENT_CURSOR_NOT_FOUND'],
      ['?after=pay_01jf8q4g0x7m3r6v2k9d1n5bta', 'VALIDATION_FAILED'],
      ['?type=payout.exploded', 'VALIDATION_FAILED'],
      ['?limit=0', 'VALIDATION_FAILED'],
      ['?limit=1001', 'VALIDATION_FAILED'],
    ];
    for (const [query, code] of cases) {
      const res = await list(alice.apiKey, query);
      expect([res.statusCode, res.json().code], query).toEqual([400, code]);
    }
  });

  it('needs a valid API key', async () => {
    for (const headers of [{}, { 'x-api-key': 'sk_nope' }]) {
      const res = await t.request({ method: 'GET', url: '/events', headers });
      expect([res.statusCode, res.json().code]).toEqual([401, 'INVALID_API_KEY']);
    }
  });
});
