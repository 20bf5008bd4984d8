import { describe, expect, it } from 'vitest';
import { advanceBatchProgress, type BatchProgress, batchSummaryView } from './batch.ts';

const created = new Date('2026-03-01T11:00:00.000Z');
const now = new Date('2026-03-01T12:00:00.456Z');
const pending: BatchProgress = {
  id: 'bat_1',
  status: 'pending',
  total: 5,
  processed: 0,
  succeeded: 0,
  failed: 0,
  created_at: created,
  updated_at: created,
  completed_at: null,
};

describe('advanceBatchProgress', () => {
  it('adds a chunk from where it starts: processing until its last item, then completed at the time of that chunk', () => {
    const first = advanceBatchProgress(pending, { start: 0, count: 3, succeeded: 2, failed: 1 }, now);
    expect(first).toEqual({ ...pending, status: 'processing', processed: 3, succeeded: 2, failed: 1, updated_at: now });
    const later = new Date(now.getTime() + 1000);
    const last = advanceBatchProgress(first!, { start: 3, count: 2, succeeded: 2, failed: 0 }, later);
    expect(last).toEqual({
      ...pending,
      status: 'completed',
      processed: 5,
      succeeded: 4,
      failed: 1,
      updated_at: later,
      completed_at: later,
    });
  });

  it('refuses a chunk that does not start where the batch is (another copy of the job got there first)', () => {
    const moved = { ...pending, status: 'processing' as const, processed: 3, succeeded: 3 };
    expect(advanceBatchProgress(moved, { start: 0, count: 3, succeeded: 3, failed: 0 }, now)).toBeUndefined();
    expect(advanceBatchProgress(pending, { start: 3, count: 2, succeeded: 2, failed: 0 }, now)).toBeUndefined();
  });

  it('keeps the fields it does not own (whose batch it is)', () => {
    const state = { ...pending, owner_id: 'own_1', quest_id: 7 };
    expect(advanceBatchProgress(state, { start: 0, count: 5, succeeded: 5, failed: 0 }, now)).toMatchObject({
      owner_id: 'own_1',
      quest_id: 7,
      status: 'completed',
    });
  });
});

describe('batchSummaryView', () => {
  it('answers the progress with ISO 8601 UTC timestamps in milliseconds, completed_at null until completed', () => {
    expect(batchSummaryView(pending)).toEqual({
      id: 'bat_1',
      status: 'pending',
      total: 5,
      processed: 0,
      succeeded: 0,
      failed: 0,
      created_at: '2026-03-01T11:00:00.000Z',
      updated_at: '2026-03-01T11:00:00.000Z',
      completed_at: null,
    });
    expect(batchSummaryView({ ...pending, status: 'completed', completed_at: now }).completed_at).toBe(
      '2026-03-01T12:00:00.456Z',
    );
  });
});
