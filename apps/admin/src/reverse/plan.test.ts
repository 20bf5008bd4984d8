import { describe, expect, it } from 'vitest';
import { checkAddressRow, checkPayoutRow, KEY_SCHEME, Occurrences, reversalKey } from './plan.ts';
import { closingHint, failedCells, summaryJson, Tally } from './report.ts';

const PAY = 'pay_01jd8x6m7e9v3q4w5r6t7y8z9a';

describe('checkPayoutRow', () => {
  it('takes a payout id with no points (the whole payout) or a positive integer', () => {
    expect(checkPayoutRow({ payout_id: PAY, points: '' })).toEqual({ ok: true, value: { payoutId: PAY, points: undefined } });
    expect(checkPayoutRow({ payout_id: PAY, points: '12' })).toEqual({ ok: true, value: { payoutId: PAY, points: 12 } });
  });

  it('refuses what the API would refuse', () => {
    for (const points of ['0', '-1', '1.5', '1e3', 'x', '99999999999999999999'])
      expect(checkPayoutRow({ payout_id: PAY, points }).ok, points).toBe(false);
    for (const payout_id of ['', 'pay_', 'alc_01jd8x6m7e9v3q4w5r6t7y8z9a', `${PAY}x`, PAY.toUpperCase()])
      expect(checkPayoutRow({ payout_id, points: '' }).ok, payout_id).toBe(false);
  });
});

describe('checkAddressRow', () => {
  it('takes 0x + 40 hex digits in any case, nothing else', () => {
    expect(checkAddressRow({ address: `0x${'aB'.repeat(20)}` }).ok).toBe(true);
    for (const address of ['', '0x12', `0x${'g'.repeat(40)}`, `${'a'.repeat(42)}`])
      expect(checkAddressRow({ address }).ok).toBe(false);
  });
});

describe('reversalKey', () => {
  it('is the same for the same quest, payout, amount and repetition, and differs in each of them', () => {
    const k = { questId: 7, payoutId: PAY, points: undefined, occurrence: 0 };
    expect(reversalKey(k)).toBe(`${KEY_SCHEME}:q7:${PAY}:all:0`);
    expect(reversalKey({ ...k })).toBe(reversalKey(k));
    const others = [
      { ...k, questId: 8 },
      { ...k, payoutId: `${PAY.slice(0, -1)}b` },
      { ...k, points: 5 },
      { ...k, occurrence: 1 },
    ];
    expect(new Set([reversalKey(k), ...others.map(reversalKey)]).size).toBe(5);
    // Within the API's 255-character limit for an Idempotency-Key.
    expect(
      reversalKey({ questId: 2 ** 31 - 1, payoutId: PAY, points: Number.MAX_SAFE_INTEGER, occurrence: 1e6 }).length,
    ).toBeLessThan(255);
  });

  it('numbers repetitions of the same (payout, amount) in input order', () => {
    const o = new Occurrences();
    expect([o.next(PAY, 10), o.next(PAY, 10), o.next(PAY, undefined), o.next(PAY, 10), o.next('pay_other', 10)]).toEqual([
      0, 1, 0, 2, 0,
    ]);
  });
});

describe('Tally and summary', () => {
  it('counts replays and already-reversed payouts as done, failures apart, and hints only when there is something to do', () => {
    const t = new Tally();
    t.rows = 4;
    t.reversal(30, false);
    t.reversal(10, true);
    t.done();
    t.fail({ line: 5, payoutId: PAY, points: '', address: '', code: 'PAYOUT_NOT_FOUND' }, true);
    expect(t.succeeded).toBe(3);
    const s = {
      quest: 7,
      mode: 'payouts' as const,
      file: 'p.csv',
      reason: undefined,
      tally: t,
      failedFile: 'p.csv.failed.csv',
      elapsedMs: 5,
    };
    expect(summaryJson(s)).toMatchObject({
      rows: 4,
      payouts: 4,
      succeeded: 3,
      reversed: 1,
      pointsReversed: 30,
      replayed: 1,
      alreadyReversed: 1,
      failed: 1,
    });
    expect(closingHint(s)).toContain('p.csv.failed.csv');
    expect(closingHint({ ...s, tally: new Tally() })).toBeUndefined();
    expect(failedCells('payouts', t.failures[0]!)).toEqual([5, PAY, '', 'PAYOUT_NOT_FOUND']);
    expect(failedCells('addresses', { ...t.failures[0]!, address: '0xab' })).toEqual([5, '0xab', PAY, 'PAYOUT_NOT_FOUND']);
  });
});
