import { describe, expect, it } from 'vitest';
import { decideAllocations, type QuestLedgerState } from './allocation.ts';

const now = new Date('2030-06-01T12:00:00.000Z');
const quest = (over: Partial<QuestLedgerState> = {}): QuestLedgerState => ({
  startAt: new Date('2030-06-01T00:00:00.000Z'),
  endAt: new Date('2030-06-02T00:00:00.000Z'),
  actionStatus: 'active',
  pointsRemaining: 100,
  ...over,
});
const codes = (r: ReturnType<typeof decideAllocations>) => r.decisions.map((d) => (d.ok ? 'ok' : d.code));

describe('decideAllocations', () => {
  it('checks each item against the budget left by the ones before it', () => {
    const r = decideAllocations(
      quest(),
      [60, 50, 40].map((points) => ({ points, accountId: 1 })),
      now,
    );
    expect(codes(r)).toEqual(['ok', 'INSUFFICIENT_POINTS', 'ok']);
    expect(r.pointsRemaining).toBe(0);
  });

  it('accepts an item equal to the remaining budget and rejects one point more', () => {
    expect(codes(decideAllocations(quest(), [{ points: 100, accountId: 1 }], now))).toEqual(['ok']);
    expect(codes(decideAllocations(quest(), [{ points: 101, accountId: 1 }], now))).toEqual(['INSUFFICIENT_POINTS']);
  });

  it('rejects an unknown account without spending budget', () => {
    const r = decideAllocations(
      quest(),
      [
        { points: 70, accountId: null },
        { points: 70, accountId: 2 },
      ],
      now,
    );
    expect(codes(r)).toEqual(['ACCOUNT_NOT_FOUND', 'ok']);
    expect(r.pointsRemaining).toBe(30);
  });

  it('checks the budget before the account (the order of the error table)', () => {
    expect(codes(decideAllocations(quest(), [{ points: 500, accountId: null }], now))).toEqual(['INSUFFICIENT_POINTS']);
  });

  it('uses a half-open window [start, end)', () => {
    const q = quest();
    expect(codes(decideAllocations(q, [{ points: 1, accountId: 1 }], q.startAt))).toEqual(['ok']);
    expect(codes(decideAllocations(q, [{ points: 1, accountId: 1 }], q.endAt))).toEqual(['QUEST_NOT_ACTIVE']);
    expect(codes(decideAllocations(q, [{ points: 1, accountId: 1 }], new Date(q.startAt.getTime() - 1)))).toEqual([
      'QUEST_NOT_ACTIVE',
    ]);
  });

  it('puts the window before the action type, and the action type before the budget', () => {
    const off = quest({ actionStatus: 'deactivated' });
    expect(codes(decideAllocations(off, [{ points: 1, accountId: 1 }], now))).toEqual(['ACTION_TYPE_INACTIVE']);
    expect(codes(decideAllocations(off, [{ points: 1, accountId: 1 }], off.endAt))).toEqual(['QUEST_NOT_ACTIVE']);
    const r = decideAllocations(off, [{ points: 1000, accountId: null }], now);
    expect(codes(r)).toEqual(['ACTION_TYPE_INACTIVE']);
    expect(r.pointsRemaining).toBe(100);
  });

  it('decides an empty list as nothing', () => {
    expect(decideAllocations(quest(), [], now)).toEqual({ decisions: [], pointsRemaining: 100 });
  });
});
