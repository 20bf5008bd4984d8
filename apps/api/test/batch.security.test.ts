import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createOwner,
  createQuest,
  randomAddress,
  type SeededOwner,
  scriptedAllocator,
  startTestApp,
  type TestApp,
} from './helpers.ts';

/** Batches belong to their quest's owner: no one else creates or reads them, and nothing is stored for them. */

let t: TestApp;
let owner: SeededOwner;
let other: SeededOwner;
let questId: number;
const allocator = scriptedAllocator({});

beforeAll(async () => {
  t = await startTestApp({ allocator });
  owner = await createOwner(t.sql);
  other = await createOwner(t.sql);
  questId = await createQuest(t.sql, { ownerId: owner.id });
});
afterAll(async () => {
  await t.close();
});

const create = (key: string | undefined) =>
  t.request({
    method: 'POST',
    url: `/quests/${questId}/batches`,
    headers: { 'content-type': 'application/json', ...(key === undefined ? {} : { 'x-api-key': key }) },
    payload: { allocations: [{ address: randomAddress(), points: 1 }] },
  });

describe('batch routes: API key', () => {
  it.each([
    ['no key', 'INVALID_API_KEY', undefined],
    ['a malformed key', 'INVALID_API_KEY', 'sk_'],
    ["another owner's key", 'NOT_QUEST_OWNER', 'other'],
  ] as const)('answers %s with 401 %s and stores no batch', async (_, code, key) => {
    const res = await create(key === 'other' ? other.apiKey : key);
    expect(res.statusCode).toBe(401);
    expect(res.json().code).toBe(code);
    expect(await t.sql`select 1 from batches`).toHaveLength(0);
  });

  it("hides a batch from another owner's key, and from its own quest's neighbours", async () => {
    const created = await create(owner.apiKey);
    expect(created.statusCode).toBe(202);
    const location = created.headers.location as string;
    const byOther = await t.request({ method: 'GET', url: location, headers: { 'x-api-key': other.apiKey } });
    expect(byOther.statusCode).toBe(401);
    const sibling = await createQuest(t.sql, { ownerId: owner.id });
    const elsewhere = await t.request({
      method: 'GET',
      url: location.replace(`/quests/${questId}/`, `/quests/${sibling}/`),
      headers: { 'x-api-key': owner.apiKey },
    });
    expect(elsewhere.statusCode).toBe(404);
    expect(elsewhere.json().code).toBe('BATCH_NOT_FOUND');
  });
});
