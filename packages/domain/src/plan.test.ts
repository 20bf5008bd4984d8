import { describe, expect, it } from 'vitest';
import type { QuestLedgerState } from './allocation.ts';
import {
  itemsToLookUp,
  type PlanAccount,
  type PlanItem,
  type PlanPayout,
  type PlanReversalItem,
  type PlanState,
  type StoredReversal,
} from './plan.ts';
import { planRequests } from './planner.ts';

const now = new Date('2030-06-01T12:00:00.000Z');
const quest = (over: Partial<QuestLedgerState> = {}): QuestLedgerState => ({
  startAt: new Date('2030-06-01T00:00:00.000Z'),
  endAt: new Date('2030-06-02T00:00:00.000Z'),
  actionStatus: 'active',
  pointsRemaining: 100,
  ...over,
});
const A = '0x00000000000000000000000000000000000000aA';
const B = '0x00000000000000000000000000000000000000bB';
const account = (id: number, passAddress: string, balance = 0): [string, PlanAccount] => [
  passAddress.toLowerCase(),
  { id, passAddress, balance },
];
const state = (over: Partial<PlanState> = {}): PlanState => ({
  quests: new Map([[1, quest()]]),
  accounts: new Map([account(10, A), account(11, B)]),
  stored: [],
  ...over,
});
const item = (key: string, points: number, address = A, questId = 1): PlanItem => ({ key, questId, points, address });
let ids = 0;
const plan = (items: PlanItem[], s = state()) => planRequests(items, s, now, () => `pay_${++ids}`);
const codes = (p: ReturnType<typeof plan>) => p.outcomes.map((o) => (o.status === 'rejected' ? o.code : o.status));

describe('planRequests', () => {
  it('decides fresh items in order and returns the rows to write', () => {
    const p = plan([item('k1', 60), item('k2', 50, B), item('k3', 40, B.toLowerCase())]);
    expect(codes(p)).toEqual(['completed', 'INSUFFICIENT_POINTS', 'completed']);
    expect(p.payouts.map((r) => [r.key, r.accountId, r.amount])).toEqual([
      ['k1', 10, 60],
      ['k3', 11, 40],
    ]);
    expect(p.rejections.map((r) => [r.key, r.code])).toEqual([['k2', 'INSUFFICIENT_POINTS']]);
    expect(p.pointsRemaining).toEqual(new Map([[1, 0]]));
    expect(p.credits).toEqual([
      [10, 60],
      [11, 40],
    ]);
    expect([p.succeeded, p.failed]).toEqual([2, 1]);
    // Answers carry the stored checksummed address, whatever case the item used.
    expect(p.outcomes[2]).toMatchObject({ payout: { account: { pass: B } } });
  });

  it("stores a single request's rejection with the checksummed address, a batch item's as sent", () => {
    const lower = '0x52908400098527886e0f7030069857d2e4169ee7';
    const p = plan(
      [
        { key: 'single', questId: 1, points: 1, address: lower },
        { key: 'bat_1:0', questId: 1, points: 1, address: lower, batchId: 'bat_1', itemIndex: 0 },
      ],
      state({ accounts: new Map() }),
    );
    expect(codes(p)).toEqual(['ACCOUNT_NOT_FOUND', 'ACCOUNT_NOT_FOUND']);
    expect(p.rejections.map((r) => r.address)).toEqual(['0x52908400098527886E0F7030069857D2E4169EE7', lower]);
  });

  it('replays stored outcomes, marked replayed, and refuses a different body for a used key', () => {
    const stored = [
      { questId: 1, key: 'paid', payoutId: 'pay_old', amount: 5, createdAt: now, address: A, errorCode: null },
      {
        questId: 1,
        key: 'refused',
        payoutId: null,
        amount: 500,
        createdAt: now,
        address: A,
        errorCode: 'INSUFFICIENT_POINTS' as const,
      },
    ];
    const p = plan([item('paid', 5, A.toLowerCase()), item('refused', 500), item('paid', 6)], state({ stored }));
    expect(p.outcomes).toEqual([
      {
        status: 'completed',
        replayed: true,
        payout: { id: 'pay_old', amount: 5, created_at: now.toISOString(), account: { pass: A } },
      },
      { status: 'rejected', code: 'INSUFFICIENT_POINTS', replayed: true },
      { status: 'rejected', code: 'IDEMPOTENCY_KEY_REUSED' },
    ]);
    expect(p.payouts).toEqual([]);
    expect(p.rejections).toEqual([]);
    expect(p.pointsRemaining.size).toBe(0);
  });

  it('treats a key repeated inside the list as one request', () => {
    const p = plan([item('dup', 10), item('dup', 10), item('dup', 11)]);
    expect(p.outcomes[1]).toEqual({ ...p.outcomes[0], replayed: true });
    expect(p.outcomes[2]).toEqual({ status: 'rejected', code: 'IDEMPOTENCY_KEY_REUSED' });
    expect(p.payouts).toHaveLength(1);
  });

  it('rejects a credit past the balance limit, also across quests of one plan, and fails items of a missing quest', () => {
    const s = state({
      quests: new Map([
        [1, quest({ pointsRemaining: Number.MAX_SAFE_INTEGER })],
        [2, quest()],
      ]),
      accounts: new Map([account(10, A, Number.MAX_SAFE_INTEGER - 10), account(11, B)]),
    });
    const p = plan([item('a', 10, A, 1), item('b', 1, A, 2), item('c', 3, B, 2), item('d', 1, A, 3)], s);
    expect(codes(p)).toEqual(['completed', 'BALANCE_LIMIT_EXCEEDED', 'completed', 'failed']);
    // A rejected item spends no budget.
    expect(p.pointsRemaining.get(2)).toBe(97);
  });
});

describe('planRequests: reversals in order with allocations', () => {
  const paid = (over: Partial<PlanPayout> = {}): PlanPayout => ({
    id: 'pay_p',
    questId: 1,
    accountId: 10,
    passAddress: A,
    amount: 60,
    reversed: 0,
    ...over,
  });
  const withPayouts = (over: Partial<PlanState> = {}, ...list: PlanPayout[]) =>
    state({
      accounts: new Map([account(10, A, 60), account(11, B)]),
      payouts: new Map((list.length ? list : [paid()]).map((p) => [p.id, p])),
      ...over,
    });
  const reverse = (key: string, points?: number, payoutId = 'pay_p', questId = 1): PlanReversalItem => ({
    kind: 'reversal',
    key,
    questId,
    payoutId,
    ...(points === undefined ? {} : { points }),
  });

  it('allocation → reversal → allocation on an exhausted budget: the reversal frees the points for the next one', () => {
    const s = withPayouts({ quests: new Map([[1, quest({ pointsRemaining: 0 })]]) });
    const p = plan([item('before', 10, B), reverse('rev_1'), item('after', 60, B)], s);
    expect(codes(p)).toEqual(['INSUFFICIENT_POINTS', 'reversed', 'completed']);
    expect(p.pointsRemaining.size).toBe(0); // 0 → 60 → 0: unchanged, nothing to write
    expect(p.reversals).toEqual([
      { id: 'rev_1', questId: 1, payoutId: 'pay_p', accountId: 10, amount: 60, requestedPoints: null, reason: null },
    ]);
    // The account reversed from loses 60, the other gains 60; net per account, in id order.
    expect(p.credits).toEqual([
      [10, -60],
      [11, 60],
    ]);
    expect(p.outcomes[1]).toEqual({
      status: 'reversed',
      reversal: {
        id: 'rev_1',
        payout_id: 'pay_p',
        quest_id: 1,
        amount: 60,
        reason: null,
        created_at: now.toISOString(),
        account: { pass: A },
      },
    });
  });

  it('a reversal racing an allocation for the last points is decided in list order, either way', () => {
    const s = () => withPayouts({ quests: new Map([[1, quest({ pointsRemaining: 5 })]]) });
    // Allocation first: only 5 left, so 20 is refused; the reversal then gives back 20.
    const first = plan([item('a', 20, B), reverse('r', 20)], s());
    expect(codes(first)).toEqual(['INSUFFICIENT_POINTS', 'reversed']);
    expect(first.pointsRemaining.get(1)).toBe(25);
    // Reversal first: 25 left, so the allocation of 20 is credited.
    const second = plan([reverse('r', 20), item('a', 20, B)], s());
    expect(codes(second)).toEqual(['reversed', 'completed']);
    expect(second.pointsRemaining.size).toBe(0); // back where it started
  });

  it('also after the window ended, when allocations are refused', () => {
    const s = withPayouts({ quests: new Map([[1, quest({ endAt: new Date('2030-06-01T06:00:00.000Z'), pointsRemaining: 0 })]]) });
    const p = plan([reverse('r', 15), item('a', 1, B)], s);
    expect(codes(p)).toEqual(['reversed', 'QUEST_NOT_ACTIVE']);
    expect(p.pointsRemaining.get(1)).toBe(15);
  });

  it('adds partial reversals up, stored and in the list, and refuses what exceeds the payout', () => {
    const s = withPayouts({}, paid({ reversed: 20 }));
    const p = plan([reverse('r1', 15), reverse('r2', 30), reverse('r3', 25), reverse('r4'), reverse('r5')], s);
    expect(codes(p)).toEqual([
      'reversed',
      'REVERSAL_EXCEEDS_PAYOUT',
      'reversed',
      'PAYOUT_ALREADY_REVERSED',
      'PAYOUT_ALREADY_REVERSED',
    ]);
    expect(p.reversals.map((r) => r.amount)).toEqual([15, 25]);
    expect(p.reversalRejections.map((r) => [r.key, r.code, r.requestedPoints])).toEqual([
      ['r2', 'REVERSAL_EXCEEDS_PAYOUT', 30],
      ['r4', 'PAYOUT_ALREADY_REVERSED', null],
      ['r5', 'PAYOUT_ALREADY_REVERSED', null],
    ]);
    expect(p.pointsRemaining.get(1)).toBe(140);
    expect(p.credits).toEqual([[10, -40]]);
    expect([p.succeeded, p.failed]).toEqual([2, 3]);
  });

  it('refuses an unknown payout, or one of another quest, as PAYOUT_NOT_FOUND', () => {
    const s = withPayouts(
      {
        quests: new Map([
          [1, quest()],
          [2, quest()],
        ]),
      },
      paid(),
      paid({ id: 'pay_other', questId: 2 }),
    );
    const p = plan([reverse('r1', 1, 'pay_missing'), reverse('r2', 1, 'pay_other', 1)], s);
    expect(codes(p)).toEqual(['PAYOUT_NOT_FOUND', 'PAYOUT_NOT_FOUND']);
    expect(p.pointsRemaining.size).toBe(0);
    expect(p.credits).toEqual([]);
  });

  it('replays a stored reversal for the same body and refuses another body or kind under its key', () => {
    const stored: StoredReversal[] = [
      {
        kind: 'reversal',
        questId: 1,
        key: 'rev_done',
        payoutId: 'pay_p',
        requestedPoints: null,
        reason: 'bots',
        amount: 60,
        createdAt: now,
        address: A,
        errorCode: null,
      },
      {
        kind: 'reversal',
        questId: 1,
        key: 'rev_refused',
        payoutId: 'pay_p',
        requestedPoints: 99,
        reason: null,
        amount: 0,
        createdAt: now,
        address: null,
        errorCode: 'REVERSAL_EXCEEDS_PAYOUT',
      },
    ];
    const s = withPayouts({ stored }, paid({ reversed: 60 }));
    const p = plan(
      [{ ...reverse('rev_done'), reason: 'bots' }, reverse('rev_refused', 99), reverse('rev_done'), item('rev_done', 60)],
      s,
    );
    expect(p.outcomes).toEqual([
      {
        status: 'reversed',
        replayed: true,
        reversal: expect.objectContaining({ id: 'rev_done', amount: 60, reason: 'bots', account: { pass: A } }),
      },
      { status: 'rejected', code: 'REVERSAL_EXCEEDS_PAYOUT', replayed: true },
      { status: 'rejected', code: 'IDEMPOTENCY_KEY_REUSED' },
      { status: 'rejected', code: 'IDEMPOTENCY_KEY_REUSED' },
    ]);
    expect(p.reversals).toEqual([]);
    expect(p.reversalRejections).toEqual([]);
  });

  it('treats a reversal key repeated inside the list as one request', () => {
    const p = plan([reverse('r', 10), reverse('r', 10), reverse('r', 11)], withPayouts());
    expect(p.outcomes[1]).toEqual({ ...p.outcomes[0], replayed: true });
    expect(p.outcomes[2]).toEqual({ status: 'rejected', code: 'IDEMPOTENCY_KEY_REUSED' });
    expect(p.reversals).toHaveLength(1);
  });
});

describe('itemsToLookUp', () => {
  it('reads only client keys on a first delivery, every key otherwise', () => {
    const items: PlanItem[] = [
      item('alc_01generated', 1),
      item('alc_kclientkey', 1),
      item('bat_kbatch:0', 1),
      { kind: 'reversal', key: 'rev_01generated', questId: 1, payoutId: 'pay_p' },
      { kind: 'reversal', key: 'rev_kclientkey', questId: 1, payoutId: 'pay_p' },
    ];
    expect(itemsToLookUp(items, true).map((i) => i.key)).toEqual(['alc_kclientkey', 'bat_kbatch:0', 'rev_kclientkey']);
    expect(itemsToLookUp(items, false)).toEqual(items);
  });
});
