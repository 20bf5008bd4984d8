import { describe, expect, it } from 'vitest';
import { decideReversal, reversalView } from './reversal.ts';

describe('decideReversal', () => {
  it('reverses the whole unreversed remainder when no points are given', () => {
    expect(decideReversal({ amount: 100, reversed: 0 }, undefined)).toEqual({ ok: true, amount: 100 });
    expect(decideReversal({ amount: 100, reversed: 30 }, undefined)).toEqual({ ok: true, amount: 70 });
  });

  it('reverses the points asked for, up to the remainder exactly', () => {
    expect(decideReversal({ amount: 100, reversed: 30 }, 20)).toEqual({ ok: true, amount: 20 });
    expect(decideReversal({ amount: 100, reversed: 30 }, 70)).toEqual({ ok: true, amount: 70 });
  });

  it('refuses more than the remainder: REVERSAL_EXCEEDS_PAYOUT', () => {
    expect(decideReversal({ amount: 100, reversed: 30 }, 71)).toEqual({ ok: false, code: 'REVERSAL_EXCEEDS_PAYOUT' });
    expect(decideReversal({ amount: 5, reversed: 0 }, 6)).toEqual({ ok: false, code: 'REVERSAL_EXCEEDS_PAYOUT' });
  });

  it('refuses a payout with nothing left, with or without points: PAYOUT_ALREADY_REVERSED', () => {
    expect(decideReversal({ amount: 100, reversed: 100 }, undefined)).toEqual({ ok: false, code: 'PAYOUT_ALREADY_REVERSED' });
    expect(decideReversal({ amount: 100, reversed: 100 }, 1)).toEqual({ ok: false, code: 'PAYOUT_ALREADY_REVERSED' });
  });
});

describe('reversalView', () => {
  it('builds the API shape from a date or an ISO string', () => {
    const view = {
      id: 'rev_1',
      payout_id: 'pay_1',
      quest_id: 7,
      amount: 3,
      reason: null,
      created_at: '1970-01-01T00:00:00.000Z',
      account: { pass: '0xabc' },
    };
    const fields = { id: 'rev_1', payoutId: 'pay_1', questId: 7, amount: 3, reason: null, pass: '0xabc' };
    expect(reversalView({ ...fields, createdAt: new Date(0) })).toEqual(view);
    expect(reversalView({ ...fields, createdAt: view.created_at })).toEqual(view);
  });
});
