import { describe, expect, it } from 'vitest';
import { type BatchState, batchSummaryView } from './batch.ts';
import { type EventQuest, planEvents } from './events.ts';
import type { RequestOutcome } from './jobs.ts';
import type { PlanItem } from './plan.ts';

const now = new Date('2026-03-01T12:00:00.000Z');
const payout = (id: string, amount: number) => ({ id, amount, created_at: now.toISOString(), account: { pass: '0xA' } });
const quest = (over: Partial<EventQuest> = {}): EventQuest => ({
  ownerId: 'own_1',
  totalPoints: 1000,
  pointsRemaining: 1000,
  budgetLowThreshold: null,
  ...over,
});
let n = 0;
const ids = () => `evt_${String(++n).padStart(4, '0')}`;
const items: PlanItem[] = [
  { key: 'alc_1', questId: 7, points: 10, address: '0xa' },
  { key: 'alc_2', questId: 7, points: 20, address: '0xb' },
  { key: 'alc_3', questId: 7, points: 30, address: '0xc' },
  { key: 'alc_4', questId: 7, points: 40, address: '0xd' },
];

describe('planEvents', () => {
  it('announces each item decided now, in item order, and nothing for replays and failures', () => {
    const outcomes: RequestOutcome[] = [
      { status: 'completed', payout: payout('pay_1', 10) },
      { status: 'rejected', code: 'INSUFFICIENT_POINTS' },
      { status: 'completed', payout: payout('pay_0', 30), replayed: true },
      { status: 'failed', code: 'ALLOCATION_FAILED' },
    ];
    const events = planEvents(items, { outcomes, pointsRemaining: new Map() }, new Map([[7, quest()]]), now, ids);
    expect(events.map((e) => [e.type, e.allocationId])).toEqual([
      ['payout.created', 'alc_1'],
      ['allocation.rejected', 'alc_2'],
    ]);
    expect(events[0]).toMatchObject({ ownerId: 'own_1', questId: 7, batchId: null, data: { payout: payout('pay_1', 10) } });
    expect(events[1]!.data).toEqual({
      allocation: {
        id: 'alc_2',
        status: 'rejected',
        address: '0xb',
        points: 20,
        error: { code: 'INSUFFICIENT_POINTS', message: expect.any(String) },
      },
    });
    expect(events[0]!.id < events[1]!.id).toBe(true);
  });

  it("sends a single request's rejection with the checksummed address, a batch item's as sent", () => {
    const lower = '0x52908400098527886e0f7030069857d2e4169ee7';
    const rejected: PlanItem[] = [
      { key: 'alc_9', questId: 7, points: 1, address: lower },
      { key: 'bat_1:0', questId: 7, points: 1, address: lower, batchId: 'bat_1', itemIndex: 0 },
    ];
    const outcomes: RequestOutcome[] = rejected.map(() => ({ status: 'rejected', code: 'ACCOUNT_NOT_FOUND' }));
    const events = planEvents(rejected, { outcomes, pointsRemaining: new Map() }, new Map([[7, quest()]]), now, ids);
    expect(events.map((e) => (e.data.allocation as { address: string }).address)).toEqual([
      '0x52908400098527886E0F7030069857D2E4169EE7',
      lower,
    ]);
  });

  it('announces a reversal decided now as payout.reversed, and nothing for a refused or replayed one', () => {
    const reversal = {
      id: 'rev_1',
      payout_id: 'pay_1',
      quest_id: 7,
      amount: 4,
      reason: 'bot farm',
      created_at: now.toISOString(),
      account: { pass: '0xA' },
    };
    const reversals: PlanItem[] = ['rev_1', 'rev_2', 'rev_3'].map((key) => ({
      kind: 'reversal',
      key,
      questId: 7,
      payoutId: 'pay_1',
    }));
    const outcomes: RequestOutcome[] = [
      { status: 'reversed', reversal },
      { status: 'rejected', code: 'PAYOUT_ALREADY_REVERSED' },
      { status: 'reversed', reversal: { ...reversal, id: 'rev_3' }, replayed: true },
    ];
    const events = planEvents(reversals, { outcomes, pointsRemaining: new Map() }, new Map([[7, quest()]]), now, ids);
    expect(events).toEqual([
      {
        id: expect.any(String),
        type: 'payout.reversed',
        ownerId: 'own_1',
        questId: 7,
        allocationId: null,
        batchId: null,
        createdAt: now,
        data: { reversal },
      },
    ]);
  });

  it('carries the batch id of batch items', () => {
    const item: PlanItem = { key: 'bat_x:3', questId: 7, points: 5, address: '0xa', batchId: 'bat_x', itemIndex: 3 };
    const [event] = planEvents(
      [item],
      { outcomes: [{ status: 'completed', payout: payout('pay_2', 5) }], pointsRemaining: new Map() },
      new Map([[7, quest()]]),
      now,
      ids,
    );
    expect(event).toMatchObject({ allocationId: 'bat_x:3', batchId: 'bat_x' });
  });

  it('fires budget_low once when the budget crosses the threshold (10 % by default, or the owner’s), and budget_exhausted at 0', () => {
    const types = (before: number, after: number, threshold: number | null = null) =>
      planEvents(
        [],
        { outcomes: [], pointsRemaining: new Map([[7, after]]) },
        new Map([[7, quest({ pointsRemaining: before, budgetLowThreshold: threshold })]]),
        now,
        ids,
      ).map((e) => e.type);
    expect(types(150, 100)).toEqual(['quest.budget_low']);
    expect(types(101, 101)).toEqual([]);
    expect(types(100, 50)).toEqual([]); // already below: crossed earlier
    expect(types(150, 120)).toEqual([]);
    expect(types(150, 0)).toEqual(['quest.budget_exhausted']);
    expect(types(600, 450, 500)).toEqual(['quest.budget_low']);
    const [low] = planEvents(
      [],
      { outcomes: [], pointsRemaining: new Map([[7, 90]]) },
      new Map([[7, quest({ pointsRemaining: 200 })]]),
      now,
      ids,
    );
    expect(low!.data).toEqual({ quest: { id: 7, total_points: 1000, points_remaining: 90, budget_low_threshold: 100 } });
  });

  it('ends a batch chunk that completed its batch with batch.completed, carrying the batch as its route answers it', () => {
    const batch: BatchState = {
      id: 'bat_x',
      owner_id: 'own_1',
      quest_id: 7,
      status: 'completed',
      total: 4,
      processed: 4,
      succeeded: 3,
      failed: 1,
      created_at: new Date('2026-03-01T11:59:00.123Z'),
      updated_at: now,
      completed_at: now,
    };
    const item: PlanItem = { key: 'bat_x:3', questId: 7, points: 5, address: '0xa', batchId: 'bat_x', itemIndex: 3 };
    const plan = {
      outcomes: [{ status: 'completed', payout: payout('pay_3', 5) }] as RequestOutcome[],
      pointsRemaining: new Map([[7, 0]]),
    };
    const events = planEvents([item], plan, new Map([[7, quest({ pointsRemaining: 5 })]]), now, ids, batch);
    expect(events.map((e) => e.type)).toEqual(['payout.created', 'quest.budget_exhausted', 'batch.completed']);
    expect(events.map((e) => e.id)).toEqual(events.map((e) => e.id).sort());
    expect(events[2]).toEqual({
      id: expect.any(String),
      type: 'batch.completed',
      ownerId: 'own_1',
      questId: 7,
      allocationId: null,
      batchId: 'bat_x',
      createdAt: now,
      data: { batch: batchSummaryView(batch) },
    });
    expect(events[2]!.data.batch).toEqual({
      id: 'bat_x',
      status: 'completed',
      total: 4,
      processed: 4,
      succeeded: 3,
      failed: 1,
      created_at: '2026-03-01T11:59:00.123Z',
      updated_at: '2026-03-01T12:00:00.000Z',
      completed_at: '2026-03-01T12:00:00.000Z',
    });
    const unfinished = { ...batch, status: 'processing' as const, processed: 3, completed_at: null };
    expect(
      planEvents([item], plan, new Map([[7, quest({ pointsRemaining: 5 })]]), now, ids, unfinished).map((e) => e.type),
    ).toEqual(['payout.created', 'quest.budget_exhausted']);
  });
});
