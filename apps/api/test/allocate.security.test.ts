import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createApiKey,
  createOwner,
  createQuest,
  randomAddress,
  revokeApiKey,
  type SeededOwner,
  scriptedAllocator,
  startTestApp,
  type TestApp,
} from './helpers.ts';

/** Who may allocate and read an allocation: only the quest's owner, with a live key. Nothing is queued otherwise. */

let t: TestApp;
let owner: SeededOwner;
let other: SeededOwner;
let questId: number;
const allocator = scriptedAllocator({});
const body = { points: 1, address: randomAddress() };

beforeAll(async () => {
  t = await startTestApp({ allocator });
  owner = await createOwner(t.sql);
  other = await createOwner(t.sql);
  questId = await createQuest(t.sql, { ownerId: owner.id });
});
afterAll(async () => {
  await t.close();
});

const allocate = (key: string | undefined, quest = questId) =>
  t.request({
    method: 'POST',
    url: `/quests/${quest}`,
    headers: { 'content-type': 'application/json', ...(key === undefined ? {} : { 'x-api-key': key }) },
    payload: body,
  });

describe('POST /quests/:questId and its status route: API key', () => {
  it.each([
    ['no key', 401, 'INVALID_API_KEY', undefined],
    ['a malformed key', 401, 'INVALID_API_KEY', 'sk_short'],
    ['an unknown key', 401, 'INVALID_API_KEY', `sk_${'A'.repeat(43)}`],
  ] as const)('answers %s with %i %s and queues nothing', async (_, status, code, key) => {
    const res = await allocate(key);
    expect(res.statusCode).toBe(status);
    expect(res.json().code).toBe(code);
    expect(allocator.items).toHaveLength(0);
  });

  it("answers another owner's key 401 NOT_QUEST_OWNER, and an unknown quest 404 (after a valid key)", async () => {
    const notMine = await allocate(other.apiKey);
    expect(notMine.statusCode).toBe(401);
    expect(notMine.json().code).toBe('NOT_QUEST_OWNER');
    const missing = await allocate(owner.apiKey, 2_000_000_000);
    expect(missing.statusCode).toBe(404);
    expect(missing.json().code).toBe('QUEST_NOT_FOUND');
    expect(allocator.items).toHaveLength(0);
  });

  it("refuses a revoked key, while the owner's other key still works", async () => {
    const spare = await createApiKey(t.sql, owner.id);
    await revokeApiKey(t.sql, spare);
    expect((await allocate(spare)).statusCode).toBe(401);
    const res = await allocate(owner.apiKey);
    expect(res.statusCode).toBe(202);
  });

  it("keeps an allocation's status from another owner: 401, and 404 for an id of another quest", async () => {
    const pending = await allocate(owner.apiKey);
    const location = pending.headers.location as string;
    const byOther = await t.request({ method: 'GET', url: location, headers: { 'x-api-key': other.apiKey } });
    expect(byOther.statusCode).toBe(401);
    expect(byOther.json().code).toBe('NOT_QUEST_OWNER');
    const otherQuest = await createQuest(t.sql, { ownerId: owner.id });
    const elsewhere = await t.request({
      method: 'GET',
      url: location.replace(`/quests/${questId}/`, `/quests/${otherQuest}/`),
      headers: { 'x-api-key': owner.apiKey },
    });
    expect(elsewhere.statusCode).toBe(404);
    expect(elsewhere.json().code).toBe('ALLOCATION_NOT_FOUND');
  });
});
