import { describe, expect, it } from 'vitest';
import type { QuestLedgerState } from './allocation.ts';
import { itemsToLookUp, type PlanAccount, type PlanItem, type PlanState, planAllocations } from './plan.ts';

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
const plan = (items: PlanItem[], s = state()) => planAllocations(items, s, now, () => `pay_${++ids}`);
const codes = (p: ReturnType<typeof plan>) => p.outcomes.map((o) => (o.status === 'rejected' ? o.code : o.status));

describe('planAllocations', () => {
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

describe('itemsToLookUp', () => {
  it('reads only client keys on a first delivery, every key otherwise', () => {
    const items = [item('alc_01generated', 1), item('alc_kclientkey', 1), item('bat_kbatch:0', 1)];
    expect(itemsToLookUp(items, true).map((i) => i.key)).toEqual(['alc_kclientkey', 'bat_kbatch:0']);
    expect(itemsToLookUp(items, false)).toEqual(items);
  });
});
