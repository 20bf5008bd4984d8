import { applyRequests } from '@quest/db';
import type { RequestItem } from '@quest/domain';
import type { Delivery } from '@quest/queue';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  createAccount,
  createOwner,
  createPayouts,
  createQuest,
  ISO_UTC,
  randomAddress,
  type SeededOwner,
  type SeededPayout,
  scriptedAllocator,
  startTestApp,
  type TestApp,
} from './helpers.ts';

/**
 * POST /quests/{questId}/payouts/{payoutId}/reversals, GET /quests/{questId}/reversals/{id} and
 * GET /quests/{questId}/payouts/{payoutId}, through the service, with the queue and the worker
 * scripted: what the API answers for each way a decision can come back.
 */

let t: TestApp;
let owner: SeededOwner;
let questId: number;
let account: { id: number; address: `0x${string}` };
let onAllocate: (item: RequestItem) => Promise<Delivery>;
const allocator = scriptedAllocator({ onAllocate: (item) => onAllocate(item) });

/** Decide the item with the real ledger and reply with its outcome, as a worker would. */
const decideNow = async (item: RequestItem): Promise<Delivery> => {
  const [outcome] = await applyRequests(t.sql, [item], { firstDelivery: true });
  return { kind: 'decided', outcome: outcome! };
};
const undecided = (job: 'queued' | 'completed' | 'unknown', jobId = '1'): Delivery => ({
  kind: 'undecided',
  reason: job === 'queued' ? 'timeout' : 'lost',
  job,
  jobId,
  enqueuedAt: Date.now(),
});

beforeAll(async () => {
  t = await startTestApp({ allocator });
  owner = await createOwner(t.sql);
  questId = await createQuest(t.sql, { ownerId: owner.id, totalPoints: 1000 });
  account = await createAccount(t.sql, randomAddress());
});
afterAll(async () => {
  await t.close();
});
beforeEach(() => {
  onAllocate = decideNow;
});

/** A fresh payout of `amount` to the test's account. */
const payout = async (amount = 50): Promise<SeededPayout> => (await createPayouts(t.sql, questId, account, [amount]))[0]!;
const reverse = (payoutId: string, body: object = {}, headers: Record<string, string> = {}) =>
  t.request({
    method: 'POST',
    url: `/quests/${questId}/payouts/${payoutId}/reversals`,
    headers: { 'x-api-key': owner.apiKey, 'content-type': 'application/json', ...headers },
    payload: body,
  });
const get = (url: string) => t.request({ method: 'GET', url, headers: { 'x-api-key': owner.apiKey } });
const remaining = async () =>
  (await t.sql<{ points_remaining: number }[]>`select points_remaining from quests where id = ${questId}`)[0]!.points_remaining;

describe('POST /quests/:questId/payouts/:payoutId/reversals', () => {
  it('answers 200 with the reversal: points back to the quest, taken from the account', async () => {
    const p = await payout(50);
    const before = await remaining();
    const res = await reverse(p.id, { points: 20, reason: 'credited twice' });
    expect(res.statusCode).toBe(200);
    expect(res.headers).not.toHaveProperty('idempotent-replayed');
    expect(res.json()).toEqual({
      reversal: {
        id: expect.stringMatching(/^rev_0/),
        payout_id: p.id,
        quest_id: questId,
        amount: 20,
        reason: 'credited twice',
        created_at: expect.stringMatching(ISO_UTC),
        account: { pass: account.address },
      },
    });
    expect(await remaining()).toBe(before + 20);
    expect(allocator.items.at(-1)).toMatchObject({
      kind: 'reversal',
      questId,
      payoutId: p.id,
      points: 20,
      reason: 'credited twice',
    });
  });

  it('reverses the whole remainder without points, and reason is null when not given', async () => {
    const p = await payout(40);
    await reverse(p.id, { points: 15 });
    const res = await reverse(p.id);
    expect(res.statusCode).toBe(200);
    expect(res.json().reversal).toMatchObject({ amount: 25, reason: null });
    expect(allocator.items.at(-1)).not.toHaveProperty('points');
  });

  it('replays the same reversal for a retried Idempotency-Key, marked Idempotent-Replayed', async () => {
    const p = await payout(30);
    const first = await reverse(p.id, { points: 10 }, { 'idempotency-key': 'refund-1' });
    const again = await reverse(p.id, { points: 10 }, { 'idempotency-key': 'refund-1' });
    expect(again.statusCode).toBe(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.json()).toEqual(first.json());
    expect(first.json().reversal.id).toMatch(/^rev_k/);
    const [n] = await t.sql<{ n: number }[]>`select count(*)::int as n from reversals where payout_id = ${p.id}`;
    expect(n!.n).toBe(1);
  });

  it('answers 202 with a Location when undecided, and the status route says pending, then completed', async () => {
    const p = await payout(12);
    onAllocate = async () => undecided('queued', '7');
    const res = await reverse(p.id, { points: 5 });
    expect(res.statusCode).toBe(202);
    const { reversal } = res.json();
    expect(reversal).toEqual({
      id: expect.stringMatching(/^rev_/),
      status: 'pending',
      payout_id: p.id,
      quest_id: questId,
      updated_at: expect.stringMatching(ISO_UTC),
    });
    expect(res.headers.location).toBe(`/quests/${questId}/reversals/${reversal.id}`);
    expect((await get(res.headers.location as string)).json().reversal).toMatchObject({ id: reversal.id, status: 'pending' });
    const [marker] = await t.sql<{ kind: string; job_id: string; payout_id: string; points: number }[]>`
      select kind, job_id, payout_id, points from allocation_requests where request_key = ${reversal.id}`;
    expect(marker).toEqual({ kind: 'reversal', job_id: '7', payout_id: p.id, points: 5 });

    await applyRequests(t.sql, [allocator.items.at(-1)!], { firstDelivery: false });
    const done = await get(res.headers.location as string);
    expect(done.statusCode).toBe(200);
    expect(done.json().reversal).toEqual({
      id: reversal.id,
      status: 'completed',
      payout_id: p.id,
      quest_id: questId,
      amount: 5,
      reason: null,
      created_at: expect.stringMatching(ISO_UTC),
      account: { pass: account.address },
      updated_at: expect.stringMatching(ISO_UTC),
    });
  });

  it('answers from the database when the job finished but its reply was lost', async () => {
    const p = await payout(9);
    onAllocate = async (item) => {
      await decideNow(item);
      return undecided('completed', '8');
    };
    const res = await reverse(p.id, { points: 4 });
    expect(res.statusCode).toBe(200);
    expect(res.json().reversal).toMatchObject({ payout_id: p.id, amount: 4 });
  });

  it('the status route shows a rejected reversal with its error', async () => {
    const p = await payout(3);
    onAllocate = async () => undecided('queued');
    const pending = await reverse(p.id, { points: 4 });
    await applyRequests(t.sql, [allocator.items.at(-1)!], { firstDelivery: false });
    const res = await get(pending.headers.location as string);
    expect(res.json().reversal).toMatchObject({
      status: 'rejected',
      payout_id: p.id,
      error: { code: 'REVERSAL_EXCEEDS_PAYOUT', message: expect.any(String) },
    });
  });
});

describe('GET /quests/:questId/payouts/:payoutId', () => {
  it('shows the payout with reversed_amount and its reversals in order; the quest view keeps the spec fields', async () => {
    const p = await payout(60);
    const plain = await get(`/quests/${questId}/payouts/${p.id}`);
    expect(plain.statusCode).toBe(200);
    expect(plain.json()).toEqual({
      payout: {
        id: p.id,
        amount: 60,
        created_at: p.createdAt.toISOString(),
        account: { pass: account.address },
        reversed_amount: 0,
        reversals: [],
      },
    });
    const first = (await reverse(p.id, { points: 10, reason: 'a' })).json().reversal;
    const second = (await reverse(p.id, { points: 5 })).json().reversal;
    const res = await get(`/quests/${questId}/payouts/${p.id}`);
    expect(res.json().payout).toMatchObject({ id: p.id, amount: 60, reversed_amount: 15, reversals: [first, second] });

    const quest = (await get(`/quests/${questId}?limit=100`)).json();
    const listed = quest.payouts.find((x: { id: string }) => x.id === p.id);
    expect(listed).toEqual({ id: p.id, amount: 60, created_at: p.createdAt.toISOString(), account: { pass: account.address } });
    expect(Object.keys(quest).sort()).toEqual(
      ['id', 'name', 'description', 'total_points', 'points_remaining', 'start', 'end', 'is_active', 'payouts'].sort(),
    );
  });
});
