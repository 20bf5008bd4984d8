import { applyRequests } from '@quest/db';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createAccount,
  createOwner,
  createPayouts,
  createQuest,
  randomAddress,
  readOnlyAllocator,
  type SeededOwner,
  startTestApp,
  type TestApp,
} from './helpers.ts';

/** GET /quests/{questId}/payouts?address=…: an account's payouts on one quest, with what reversals took back. */

let t: TestApp;
let owner: SeededOwner;
let questId: number;
let otherQuest: number;
let account: { id: number; address: `0x${string}` };

beforeAll(async () => {
  t = await startTestApp({ allocator: readOnlyAllocator() });
  owner = await createOwner(t.sql);
  questId = await createQuest(t.sql, { ownerId: owner.id, totalPoints: 1000 });
  otherQuest = await createQuest(t.sql, { ownerId: owner.id, totalPoints: 1000 });
  account = await createAccount(t.sql, randomAddress());
});
afterAll(async () => {
  await t.close();
});

const list = (query: string, key = owner.apiKey, quest = questId) =>
  t.request({ method: 'GET', url: `/quests/${quest}/payouts?${query}`, headers: { 'x-api-key': key } });

describe('GET /quests/:questId/payouts?address=', () => {
  it("lists the account's payouts on this quest only, oldest first, with reversed_amount, a page at a time", async () => {
    const mine = await createPayouts(t.sql, questId, account, [10, 20, 30]);
    await createPayouts(t.sql, otherQuest, account, [5]);
    const someoneElse = await createAccount(t.sql, randomAddress());
    await createPayouts(t.sql, questId, someoneElse, [7]);
    const [reversed] = await applyRequests(
      t.sql,
      [{ kind: 'reversal', key: 'rev_01JTESTLISTPAYOUTS000000000', questId, payoutId: mine[1]!.id, points: 5 }],
      { firstDelivery: true },
    );
    expect(reversed).toMatchObject({ status: 'reversed' });

    // Any letter case finds the account.
    const res = await list(`address=${account.address.toLowerCase()}`);
    expect(res.statusCode).toBe(200);
    expect(
      res.json().payouts.map((p: { id: string; amount: number; reversed_amount: number }) => [p.id, p.amount, p.reversed_amount]),
    ).toEqual([
      [mine[0]!.id, 10, 0],
      [mine[1]!.id, 20, 5],
      [mine[2]!.id, 30, 0],
    ]);
    expect(res.json().payouts[0].account).toEqual({ pass: account.address });
    const page = await list(`address=${account.address}&limit=1&offset=1`);
    expect(page.json().payouts.map((p: { id: string }) => p.id)).toEqual([mine[1]!.id]);
  });

  it('answers an empty list for an address with no account', async () => {
    const res = await list(`address=${randomAddress()}`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ payouts: [] });
  });

  it('answers 400 VALIDATION_FAILED without an address or with a malformed one, 401 for another owner', async () => {
    expect((await list('')).json().code).toBe('VALIDATION_FAILED');
    const bad = await list('address=0x12');
    expect(bad.statusCode).toBe(400);
    expect(bad.json().code).toBe('VALIDATION_FAILED');
    const other = await createOwner(t.sql);
    const denied = await list(`address=${account.address}`, other.apiKey);
    expect(denied.statusCode).toBe(401);
    expect(denied.json().code).toBe('NOT_QUEST_OWNER');
  });
});
