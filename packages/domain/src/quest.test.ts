import { describe, expect, it } from 'vitest';
import { isQuestActive, isWithinWindow } from './quest.ts';

const q = { startAt: new Date('2030-01-01T00:00:00Z'), endAt: new Date('2030-01-02T00:00:00Z') };

describe('quest activity', () => {
  it('is active inside [start, end) with an active action type only', () => {
    const inside = new Date('2030-01-01T12:00:00Z');
    expect(isQuestActive({ ...q, actionStatus: 'active' }, inside)).toBe(true);
    expect(isQuestActive({ ...q, actionStatus: 'deactivated' }, inside)).toBe(false);
    expect(isQuestActive({ ...q, actionStatus: 'active' }, q.endAt)).toBe(false);
    expect(isWithinWindow(q, q.startAt)).toBe(true);
    expect(isWithinWindow(q, new Date(q.endAt.getTime() - 1))).toBe(true);
  });
});
