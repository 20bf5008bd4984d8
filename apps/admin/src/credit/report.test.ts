import { describe, expect, it } from 'vitest';
import { Refused } from './api.ts';
import { speed } from './progress.ts';
import { closingHint, refusalStop, type Summary, summaryJson, summaryText, Tally } from './report.ts';
import type { CreditItem } from './rows.ts';

const A = `0x${'ab'.repeat(20)}`;
const items = (n: number, firstLine = 2): CreditItem[] =>
  Array.from({ length: n }, (_, i) => ({ line: firstLine + i, address: A, points: 1, pointsText: '1' }));
const completed = (n: number) => Array.from({ length: n }, (_, index) => ({ index, status: 'completed' as const }));

const summary = (tally: Tally, extra: Partial<Summary> = {}): Summary => ({
  quest: 7,
  file: 'credits.csv',
  batchSize: 1000,
  tally,
  failedFile: null,
  elapsedMs: 2000,
  ...extra,
});

describe('replayed vs newly credited', () => {
  it('counts items decided before this run asked as replayed, the rest as newly credited', () => {
    const t = new Tally();
    // A batch an earlier run had completed, one it had half done (resumed now), one new.
    t.addBatch(items(4), completed(4), 4);
    const rejected = t.addBatch(
      items(4, 6),
      [...completed(3), { index: 3, status: 'rejected', error: { code: 'ACCOUNT_NOT_FOUND' } }],
      2,
    );
    t.addFailed(rejected);
    t.addBatch(items(2, 10), completed(2), 0);
    expect({ succeeded: t.succeeded, replayed: t.replayed, credited: t.credited, failed: t.failed, rows: t.rows }).toEqual({
      succeeded: 9,
      replayed: 6,
      credited: 3,
      failed: 1,
      rows: 10,
    });
    expect(rejected).toEqual([{ line: 9, address: A, points: '1', code: 'ACCOUNT_NOT_FOUND' }]);
  });

  it('a re-run that credits nothing says so, in text and JSON', () => {
    const t = new Tally();
    for (let b = 0; b < 5; b++) t.addBatch(items(1000, 2 + b * 1000), completed(1000), 1000);
    const text = summaryText(summary(t));
    expect(text).toMatch(/^Nothing new credited: credits\.csv was already credited to quest 7 \(5,000 rows replayed\)/);
    expect(text).toMatch(/succeeded +5,000: 5,000 already credited before \(replayed\), 0 newly credited/);
    expect(summaryJson(summary(t))).toMatchObject({ succeeded: 5000, credited: 0, replayed: 5000, batchSize: 1000 });
  });

  it('a first run reads as credited', () => {
    const t = new Tally();
    t.addBatch(items(3), completed(3), 0);
    const text = summaryText(summary(t));
    expect(text).toMatch(/^Credited credits\.csv to quest 7\n/);
    expect(text).toMatch(/succeeded +3 \(newly credited\)/);
    expect(closingHint(summary(t))).toBeUndefined();
  });
});

describe('--batch-size guidance: one story', () => {
  const reused = (details: unknown) =>
    new Refused(400, 'IDEMPOTENCY_KEY_REUSED', 'This Idempotency-Key was already used with a different request body.', details);

  it('a refused batch 1 names the size the file was first credited with, and the closing hint names the same one', () => {
    const stop = refusalStop(reused({ total: 5000 }), { index: 0, items: items(999) }, { questId: 7, batchSize: 999 });
    expect(stop.code).toBe('IDEMPOTENCY_KEY_REUSED');
    expect(stop.batchSize).toBe(5000);
    expect(stop.message).toMatch(/^batch 1 \(CSV lines 2–1,000\) was refused with 400 IDEMPOTENCY_KEY_REUSED: /);
    expect(stop.message).toMatch(/credited to quest 7 before with --batch-size 5000; re-run with --batch-size 5000/);
    const s = summary(new Tally(), { batchSize: 999, error: stop });
    expect(closingHint(s)).toMatch(/^Re-run with --batch-size 5000, /);
    expect(summaryText(s)).toMatch(/Re-run with --batch-size 5000/);
    expect(summaryText(s)).not.toMatch(/--batch-size 999\b.*to finish/);
    expect(summaryJson(s)).toMatchObject({ error: { code: 'IDEMPOTENCY_KEY_REUSED', batchSize: 5000 } });
  });

  it('without the size from the API, neither message tells the operator to keep the size that was refused', () => {
    const stop = refusalStop(reused(undefined), { index: 0, items: items(10) }, { questId: 7, batchSize: 10 });
    expect(stop.batchSize).toBeUndefined();
    expect(stop.message).toMatch(/with a --batch-size other than 10; re-run with that size/);
    expect(closingHint(summary(new Tally(), { batchSize: 10, error: stop }))).toMatch(
      /^Re-run with the --batch-size credits\.csv was first credited with \(not 10\)/,
    );
  });

  it('any other stop says to re-run with the same --batch-size, naming it', () => {
    const stop = refusalStop(
      new Refused(401, 'INVALID_API_KEY', 'bad key', undefined),
      { index: 2, items: items(5, 20) },
      {
        questId: 7,
        batchSize: 5,
      },
    );
    expect(stop.message).toMatch(/^batch 3 \(CSV lines 20–24\) was refused with 401 INVALID_API_KEY: bad key$/);
    expect(closingHint(summary(new Tally(), { batchSize: 5, error: stop }))).toBe(
      'Re-run the same command (same file, --batch-size 5) to finish: completed batches are not credited again.',
    );
  });

  it('a VALIDATION_FAILED answer is traced to its CSV line', () => {
    const stop = refusalStop(
      new Refused(400, 'VALIDATION_FAILED', 'bad', [{ path: 'allocations.3.points' }]),
      { index: 0, items: items(5, 2) },
      { questId: 7, batchSize: 5 },
    );
    expect(stop.line).toBe(5);
    expect(stop.message).toMatch(/\(CSV line 5\)/);
  });
});

describe('progress', () => {
  it('estimates the time left from the share of the file done (the row count is unknown until the end)', () => {
    const state = { size: 1000, bytesDone: 250, rows: 5000, succeeded: 5000, failed: 0 };
    expect(speed(state, 2000)).toEqual({ rate: 2500, etaMs: 6000 });
    expect(speed({ ...state, bytesDone: 0, rows: 0 }, 2000)).toEqual({ rate: 0, etaMs: Number.POSITIVE_INFINITY });
    expect(speed({ ...state, bytesDone: 1000 }, 2000).etaMs).toBe(0);
  });
});
