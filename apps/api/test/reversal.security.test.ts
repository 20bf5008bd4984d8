import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createAccount,
  createApiKey,
  createOwner,
  createPayouts,
  createQuest,
  randomAddress,
  revokeApiKey,
  type SeededOwner,
  scriptedAllocator,
  startTestApp,
  type TestApp,
} from './helpers.ts';

/** Who may reverse a payout and read it: only the quest's owner, with a live key. Nothing is queued otherwise. */

let t: TestApp;
let owner: SeededOwner;
let other: SeededOwner;
let questId: number;
let payoutId: string;
const allocator = scriptedAllocator({});

beforeAll(async () => {
  t = await startTestApp({ allocator });
  owner = await createOwner(t.sql);
  other = await createOwner(t.sql);
  questId = await createQuest(t.sql, { ownerId: owner.id });
  const account = await createAccount(t.sql, randomAddress());
  payoutId = (await createPayouts(t.sql, questId, account, [10]))[0]!.id;
});
afterAll(async () => {
  await t.close();
});

const reverse = (key: string | undefined, quest = questId) =>
  t.request({
    method: 'POST',
    url: `/quests/${quest}/payouts/${payoutId}/reversals`,
    headers: { 'content-type': 'application/json', ...(key === undefined ? {} : { 'x-api-key': key }) },
    payload: { points: 1 },
  });
const get = (url: string, key: string) => t.request({ method: 'GET', url, headers: { 'x-api-key': key } });

describe('the reversal routes: API key', () => {
  it.each([
    ['no key', undefined],
    ['a malformed key', 'sk_short'],
    ['an unknown key', `sk_${'A'.repeat(43)}`],
  ] as const)('answers %s with 401 INVALID_API_KEY and queues nothing', async (_, key) => {
    const res = await reverse(key);
    expect(res.statusCode).toBe(401);
    expect(res.json().code).toBe('INVALID_API_KEY');
    expect(allocator.items).toHaveLength(0);
  });

  it("answers another owner's key 401 NOT_QUEST_OWNER on every route, and an unknown quest 404", async () => {
    const notMine = await reverse(other.apiKey);
    expect(notMine.statusCode).toBe(401);
    expect(notMine.json().code).toBe('NOT_QUEST_OWNER');
    const payout = await get(`/quests/${questId}/payouts/${payoutId}`, other.apiKey);
    expect(payout.statusCode).toBe(401);
    expect(payout.json().code).toBe('NOT_QUEST_OWNER');
    const missing = await reverse(owner.apiKey, 2_000_000_000);
    expect(missing.statusCode).toBe(404);
    expect(missing.json().code).toBe('QUEST_NOT_FOUND');
    expect(allocator.items).toHaveLength(0);
  });

  it('another owner cannot reach this payout through a quest of their own: 404 PAYOUT_NOT_FOUND', async () => {
    const theirs = await createQuest(t.sql, { ownerId: other.id });
    const res = await reverse(other.apiKey, theirs);
    expect(res.statusCode).toBe(404);
    expect(res.json().code).toBe('PAYOUT_NOT_FOUND');
    expect((await get(`/quests/${theirs}/payouts/${payoutId}`, other.apiKey)).statusCode).toBe(404);
    expect(allocator.items).toHaveLength(0);
  });

  it("refuses a revoked key, while the owner's other key still works", async () => {
    const spare = await createApiKey(t.sql, owner.id);
    await revokeApiKey(t.sql, spare);
    expect((await reverse(spare)).statusCode).toBe(401);
    expect((await reverse(owner.apiKey)).statusCode).toBe(202);
  });

  it("keeps a reversal's status from another owner: 401, and 404 for an id of another quest", async () => {
    const pending = await reverse(owner.apiKey);
    const location = pending.headers.location as string;
    const byOther = await get(location, other.apiKey);
    expect(byOther.statusCode).toBe(401);
    expect(byOther.json().code).toBe('NOT_QUEST_OWNER');
    const otherQuest = await createQuest(t.sql, { ownerId: owner.id });
    const elsewhere = await get(location.replace(`/quests/${questId}/`, `/quests/${otherQuest}/`), owner.apiKey);
    expect(elsewhere.statusCode).toBe(404);
    expect(elsewhere.json().code).toBe('REVERSAL_NOT_FOUND');
  });
});
