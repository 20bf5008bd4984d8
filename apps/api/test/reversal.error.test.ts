import { DomainError, REJECTION_CODES } from '@quest/domain';
import type { Delivery } from '@quest/queue';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createAccount,
  createOwner,
  createPayouts,
  createQuest,
  randomAddress,
  type SeededOwner,
  scriptedAllocator,
  startTestApp,
  switchFlags,
  type TestApp,
} from './helpers.ts';

/** The reversal routes: bad input, unknown payouts, rejections, failures, an unavailable queue. */

let t: TestApp;
let owner: SeededOwner;
let questId: number;
let payoutId: string;
let next: () => Promise<Delivery>;
const allocator = scriptedAllocator({ onAllocate: () => next() });

beforeAll(async () => {
  t = await startTestApp({ allocator });
  owner = await createOwner(t.sql);
  questId = await createQuest(t.sql, { ownerId: owner.id });
  const account = await createAccount(t.sql, randomAddress());
  payoutId = (await createPayouts(t.sql, questId, account, [10]))[0]!.id;
});
afterAll(async () => {
  await t.close();
});

const reverse = (payload: unknown, headers: Record<string, string> = {}, payout = payoutId, quest = questId) =>
  t.request({
    method: 'POST',
    url: `/quests/${quest}/payouts/${payout}/reversals`,
    headers: { 'x-api-key': owner.apiKey, 'content-type': 'application/json', ...headers },
    payload: payload as string,
  });

describe('POST /quests/:questId/payouts/:payoutId/reversals: errors', () => {
  it.each([
    [{ points: 0 }, 'points'],
    [{ points: -3 }, 'points'],
    [{ points: 1.5 }, 'points'],
    [{ points: '5' }, 'points'],
    [{ reason: 'x'.repeat(501) }, 'reason'],
    [{ reason: 5 }, 'reason'],
    [{ points: 1, extra: true }, ''],
  ])('answers 400 VALIDATION_FAILED for %j, queueing nothing', async (body, path) => {
    const before = allocator.items.length;
    const res = await reverse(body);
    expect(res.statusCode).toBe(400);
    expect(res.json().code).toBe('VALIDATION_FAILED');
    if (path) expect(JSON.stringify(res.json().details)).toContain(path);
    expect(allocator.items.length).toBe(before);
  });

  it.each([
    ['a NUL character', 'bot\u0000farm'],
    ['a lone high surrogate', 'bot \uD800 farm'],
    ['a lone low surrogate', '\uDC00bot farm'],
  ])('answers 400 VALIDATION_FAILED for a reason with %s, queueing nothing', async (_, reason) => {
    const before = allocator.items.length;
    // JSON.stringify writes a lone surrogate as its \u escape: the body is valid JSON.
    const res = await reverse(JSON.stringify({ reason }));
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({
      code: 'VALIDATION_FAILED',
      details: [{ location: 'body', path: 'reason', message: 'must not contain a NUL character or an unpaired surrogate' }],
    });
    expect(allocator.items.length).toBe(before);
  });

  it.each(['nope', 'pay_', 'pay_01JF8Q4G0X7M3R6V2K9D1N5BTA', `pay_${'a'.repeat(300)}`, 'alc_01jf8q4g0x7m3r6v2k9d1n5bta'])(
    'answers 400 for the payout id %s',
    async (id) => {
      const res = await reverse({}, {}, id);
      expect(res.statusCode).toBe(400);
      expect(res.json().code).toBe('VALIDATION_FAILED');
    },
  );

  it('answers 404 PAYOUT_NOT_FOUND for an unknown payout and for a payout of another quest, queueing nothing', async () => {
    const before = allocator.items.length;
    const unknown = await reverse({}, {}, 'pay_01jf8q4g0x7m3r6v2k9d1n5bta');
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().code).toBe('PAYOUT_NOT_FOUND');
    const otherQuest = await createQuest(t.sql, { ownerId: owner.id });
    const elsewhere = await reverse({}, {}, payoutId, otherQuest);
    expect(elsewhere.statusCode).toBe(404);
    expect(elsewhere.json().code).toBe('PAYOUT_NOT_FOUND');
    expect(allocator.items.length).toBe(before);
  });

  it.each(['PAYOUT_ALREADY_REVERSED', 'REVERSAL_EXCEEDS_PAYOUT'] as const)(
    'answers a %s decision 400 with its code, and replays it marked Idempotent-Replayed',
    async (code) => {
      next = async () => ({ kind: 'decided', outcome: { status: 'rejected', code } });
      const res = await reverse({ points: 1 });
      expect(res.statusCode).toBe(400);
      expect(res.json().code).toBe(code);
      expect(res.headers).not.toHaveProperty('idempotent-replayed');
      next = async () => ({ kind: 'decided', outcome: { status: 'rejected', code, replayed: true } });
      const again = await reverse({ points: 1 }, { 'idempotency-key': `again-${code}` });
      expect(again.statusCode).toBe(400);
      expect(again.headers['idempotent-replayed']).toBe('true');
    },
  );

  it('answers IDEMPOTENCY_KEY_REUSED 400 and PAYOUT_NOT_FOUND 404, as the catalogue says', () => {
    expect(REJECTION_CODES).toEqual(
      expect.arrayContaining(['PAYOUT_ALREADY_REVERSED', 'REVERSAL_EXCEEDS_PAYOUT', 'PAYOUT_NOT_FOUND']),
    );
    expect(new DomainError('PAYOUT_NOT_FOUND').statusCode).toBe(404);
  });

  it('answers a failed job 503 REVERSAL_FAILED with Retry-After (nothing applied: retry with the same key)', async () => {
    next = async () => ({ kind: 'failed' });
    const res = await reverse({ points: 1 });
    expect(res.statusCode).toBe(503);
    expect(res.json().code).toBe('REVERSAL_FAILED');
    expect(res.headers['retry-after']).toBeDefined();
  });

  it('answers 503 QUEUE_UNAVAILABLE when the queue refuses the job, and writes no marker', async () => {
    next = async () => {
      throw new DomainError('QUEUE_UNAVAILABLE');
    };
    const res = await reverse({ points: 1 }, { 'idempotency-key': 'queue-down' });
    expect(res.statusCode).toBe(503);
    expect(res.json().code).toBe('QUEUE_UNAVAILABLE');
    const key = allocator.items.at(-1)!.key;
    expect(await t.sql`select 1 from allocation_requests where request_key = ${key}`).toHaveLength(0);
  });

  it('answers 400 QUESTS_DISABLED on every reversal route while the quests feature is off', async () => {
    await switchFlags(t, { quests: false });
    try {
      for (const res of [
        await reverse({ points: 1 }, { 'x-api-key': 'sk_nope' }),
        await t.request({ method: 'GET', url: `/quests/${questId}/payouts/${payoutId}`, headers: { 'x-api-key': owner.apiKey } }),
        await t.request({
          method: 'GET',
          url: `/quests/${questId}/reversals/rev_01jf8q4g0x7m3r6v2k9d1n5bta`,
          headers: { 'x-api-key': owner.apiKey },
        }),
      ]) {
        expect(res.statusCode).toBe(400);
        expect(res.json().code).toBe('QUESTS_DISABLED');
      }
    } finally {
      await switchFlags(t, { quests: true });
    }
  });
});

describe('GET /quests/:questId/reversals/:reversalId and /payouts/:payoutId: errors', () => {
  it.each(['nope', 'rev_', 'rev_k', 'pay_01jf8q4g0x7m3r6v2k9d1n5bta', `rev_${'a'.repeat(300)}`])(
    'answers 400 for the reversal id %s',
    async (id) => {
      const res = await t.request({
        method: 'GET',
        url: `/quests/${questId}/reversals/${id}`,
        headers: { 'x-api-key': owner.apiKey },
      });
      expect(res.statusCode).toBe(400);
      expect(res.json().code).toBe('VALIDATION_FAILED');
    },
  );

  it('answers 404 REVERSAL_NOT_FOUND and PAYOUT_NOT_FOUND for ids it never saw', async () => {
    const reversal = await t.request({
      method: 'GET',
      url: `/quests/${questId}/reversals/rev_01jf8q4g0x7m3r6v2k9d1n5bta`,
      headers: { 'x-api-key': owner.apiKey },
    });
    expect(reversal.statusCode).toBe(404);
    expect(reversal.json().code).toBe('REVERSAL_NOT_FOUND');
    const payout = await t.request({
      method: 'GET',
      url: `/quests/${questId}/payouts/pay_01jf8q4g0x7m3r6v2k9d1n5bta`,
      headers: { 'x-api-key': owner.apiKey },
    });
    expect(payout.statusCode).toBe(404);
    expect(payout.json().code).toBe('PAYOUT_NOT_FOUND');
  });
});
