import { describe, expect, it } from 'vitest';
import { A, envelope, FAST_RETRY, json, networkError, scriptedFetch } from '../test/fetch.ts';
import { createQuestClient } from './client.ts';
import { QuestError } from './errors.ts';

const BASE = 'http://api.test/rewards';
const PAYOUT = 'pay_01jf8q4g0x7m3r6v2k9d1n5bta';

function client(script: Parameters<typeof scriptedFetch>[0], retry: Record<string, number> = {}) {
  const f = scriptedFetch(script);
  const quest = createQuestClient({
    baseUrl: BASE,
    apiKey: 'sk_test_test_test_test',
    fetch: f.fetch,
    retry: { ...FAST_RETRY, ...retry },
  });
  return { quest, seen: f.seen };
}

const reversal = (amount = 10) => ({
  id: 'rev_1',
  payout_id: PAYOUT,
  quest_id: 7,
  amount,
  reason: null,
  created_at: '2026-03-02T09:30:00.456Z',
  account: { pass: A },
});
const pending = () => ({
  reversal: { id: 'rev_1', status: 'pending', payout_id: PAYOUT, quest_id: 7, updated_at: '2026-03-02T09:30:00.000Z' },
});
const request = { questId: 7, payoutId: PAYOUT };

describe('reverse', () => {
  it('a 200 is the reversal; the request carries the key and only the fields given', async () => {
    const { quest, seen } = client([json(200, { reversal: reversal() }), json(200, { reversal: reversal(3) })]);
    const outcome = await quest.reverse(request);
    expect(outcome).toEqual({ kind: 'reversal', reversal: reversal(), replayed: false, idempotencyKey: expect.any(String) });
    expect(seen[0]).toMatchObject({ method: 'POST', path: `/rewards/quests/7/payouts/${PAYOUT}/reversals` });
    expect(seen[0]!.headers.get('idempotency-key')).toBe(outcome.idempotencyKey);
    expect(JSON.parse(seen[0]!.body)).toEqual({});
    await quest.reverse({ ...request, points: 3, reason: 'bots' });
    expect(JSON.parse(seen[1]!.body)).toEqual({ points: 3, reason: 'bots' });
  });

  it('keeps its key across retries of network errors and 503, and reports a replay', async () => {
    const { quest, seen } = client([
      networkError(),
      envelope(503, 'QUEUE_UNAVAILABLE', 'down', { 'retry-after': '0' }),
      json(200, { reversal: reversal() }, { 'idempotent-replayed': 'true' }),
    ]);
    const outcome = await quest.reverse({ ...request, idempotencyKey: 'refund-1' });
    expect(outcome).toMatchObject({ kind: 'reversal', replayed: true, idempotencyKey: 'refund-1' });
    expect(seen.map((s) => s.headers.get('idempotency-key'))).toEqual(['refund-1', 'refund-1', 'refund-1']);
  });

  it.each([
    [400, 'PAYOUT_ALREADY_REVERSED'],
    [400, 'REVERSAL_EXCEEDS_PAYOUT'],
    [404, 'PAYOUT_NOT_FOUND'],
  ] as const)('a %i %s decision is a rejection outcome, not an error', async (status, code) => {
    const { quest } = client([envelope(status, code, 'no')]);
    expect(await quest.reverse(request)).toEqual({
      kind: 'rejection',
      code,
      message: 'no',
      replayed: false,
      idempotencyKey: expect.any(String),
    });
  });

  it('a refused request throws a QuestError that is not retryable', async () => {
    for (const [status, code] of [
      [401, 'NOT_QUEST_OWNER'],
      [400, 'IDEMPOTENCY_KEY_REUSED'],
      [400, 'INSUFFICIENT_POINTS'],
    ] as const) {
      const { quest, seen } = client([envelope(status, code)]);
      const error = await quest.reverse(request).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(QuestError);
      expect(error).toMatchObject({ code, status, retryable: false });
      expect(seen).toHaveLength(1);
    }
  });

  it('follows a 202 to its decision: the reversal, or a rejection', async () => {
    const done = { reversal: { ...reversal(), status: 'completed', updated_at: '2026-03-02T09:30:00.456Z' } };
    const { quest, seen } = client([json(202, pending()), json(200, pending()), json(200, done)]);
    expect(await quest.reverse(request)).toEqual({
      kind: 'reversal',
      reversal: reversal(),
      replayed: false,
      idempotencyKey: expect.any(String),
    });
    expect(seen.map((s) => `${s.method} ${s.path}`)).toEqual([
      `POST /rewards/quests/7/payouts/${PAYOUT}/reversals`,
      'GET /rewards/quests/7/reversals/rev_1',
      'GET /rewards/quests/7/reversals/rev_1',
    ]);
    const refused = {
      reversal: { ...pending().reversal, status: 'rejected', error: { code: 'REVERSAL_EXCEEDS_PAYOUT', message: 'no' } },
    };
    const r = client([json(202, pending()), json(200, refused)]);
    expect(await r.quest.reverse(request)).toMatchObject({ kind: 'rejection', code: 'REVERSAL_EXCEEDS_PAYOUT' });
  });

  it('sends a reversal the service gave up on again, with the same key, and gives up after its attempts', async () => {
    const failed = { reversal: { ...pending().reversal, status: 'failed', error: { code: 'REVERSAL_FAILED', message: 'x' } } };
    const { quest, seen } = client([json(202, pending()), json(200, failed), json(200, { reversal: reversal() })]);
    expect(await quest.reverse(request)).toMatchObject({ kind: 'reversal' });
    expect(seen.map((s) => s.method)).toEqual(['POST', 'GET', 'POST']);
    expect(seen[2]!.headers.get('idempotency-key')).toBe(seen[0]!.headers.get('idempotency-key'));
    const always = client([json(202, pending()), json(200, failed), json(202, pending()), json(200, failed)], { maxAttempts: 2 });
    await expect(always.quest.reverse(request)).rejects.toMatchObject({ code: 'REVERSAL_FAILED', retryable: true, attempts: 2 });
  });

  it('a reversal still pending at the deadline throws DEADLINE_EXCEEDED with the key to call again with', async () => {
    const { quest } = client([json(202, pending()), ...Array.from({ length: 50 }, () => json(200, pending()))]);
    const error = await quest.reverse({ ...request, idempotencyKey: 'refund-9', deadlineMs: 300 }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'DEADLINE_EXCEEDED', retryable: true, idempotencyKey: 'refund-9' });
    expect((error as Error).message).toMatch(/^reversal not decided/);
  });
});

describe('payout and reversal reads', () => {
  it('answer the payout with its reversals, and a reversal status', async () => {
    const detail = {
      id: PAYOUT,
      amount: 10,
      created_at: 'x',
      account: { pass: A },
      reversed_amount: 10,
      reversals: [reversal()],
    };
    const { quest, seen } = client([json(200, { payout: detail }), json(200, pending())]);
    expect(await quest.getPayout(7, PAYOUT)).toEqual(detail);
    expect(await quest.getReversal(7, 'rev_1')).toEqual(pending().reversal);
    expect(seen.map((s) => s.path)).toEqual([`/rewards/quests/7/payouts/${PAYOUT}`, '/rewards/quests/7/reversals/rev_1']);
  });
});
