import { type BatchInfo, type CreditBatchReport, type CreditRowResult, QuestError } from '@quest/client';
import { describe, expect, it } from 'vitest';
import type { CreditCsvRow } from '../csv.ts';
import { speed } from './progress.ts';
import {
  CreditStop,
  closingHint,
  itemIndexFromDetails,
  refusalStop,
  type Summary,
  summaryJson,
  summaryText,
  Tally,
} from './report.ts';

const A = `0x${'ab'.repeat(20)}`;
const PAYOUT = { id: 'pay_1', amount: 1, created_at: '2026-01-01T00:00:00.000Z', account: { pass: A } };
const items = (n: number, firstLine = 2): CreditCsvRow[] =>
  Array.from({ length: n }, (_, i) => ({ line: firstLine + i, address: A, points: '1' }));
const batchOf = (index: number, rows: CreditCsvRow[]): BatchInfo<CreditCsvRow> => ({ index, idempotencyKey: `k:${index}`, rows });
/** A report of creditMany: the batch's rows credited, the first `replayed` of them by an earlier run. */
const report = (
  rows: CreditCsvRow[],
  replayed: number,
  overrides: Record<number, CreditRowResult<CreditCsvRow>> = {},
): CreditBatchReport<CreditCsvRow> => ({
  batch: batchOf(0, rows),
  results: rows.map((row, k) => overrides[k] ?? { row, status: 'credited' as const, payout: PAYOUT, replayed: k < replayed }),
  state: { version: 1, questId: 7, keyPrefix: 'k', batchSize: 1000, rowsDone: 0, batchesDone: 0 },
});

const summary = (tally: Tally, extra: Partial<Summary> = {}): Summary => ({
  quest: 7,
  file: 'credits.csv',
  batchSize: 1000,
  batchSizeGiven: true,
  tally,
  failedFile: null,
  elapsedMs: 2000,
  ...extra,
});

describe('replayed vs newly credited', () => {
  it('counts items decided before this run asked as replayed, the rest as newly credited', () => {
    const t = new Tally();
    // A batch an earlier run had completed, one it had half done (resumed now), one new.
    t.addReport(report(items(4), 4));
    const half = items(4, 6);
    const rejected = t.addReport(
      report(half, 2, { 3: { row: half[3]!, status: 'rejected', code: 'ACCOUNT_NOT_FOUND', message: 'no', replayed: false } }),
    );
    t.addReport(report(items(2, 10), 0));
    expect({ succeeded: t.succeeded, replayed: t.replayed, credited: t.credited, failed: t.failed, rows: t.rows }).toEqual({
      succeeded: 9,
      replayed: 6,
      credited: 3,
      failed: 1,
      rows: 10,
    });
    expect(rejected).toEqual([{ line: 9, address: A, points: '1', code: 'ACCOUNT_NOT_FOUND', reason: 'no' }]);
  });

  it('a re-run that credits nothing says so, in text and JSON', () => {
    const t = new Tally();
    for (let b = 0; b < 5; b++) t.addReport(report(items(1000, 2 + b * 1000), 1000));
    const text = summaryText(summary(t));
    expect(text).toMatch(/^Nothing new credited: credits\.csv was already credited to quest 7 \(5,000 rows replayed\)/);
    expect(text).toMatch(/succeeded +5,000: 5,000 already credited before \(replayed\), 0 newly credited/);
    expect(summaryJson(summary(t))).toMatchObject({ succeeded: 5000, credited: 0, replayed: 5000, batchSize: 1000 });
  });

  it('rows not credited are in the title and the closing line, which does not promise a re-run will help', () => {
    const t = new Tally();
    const rows = items(3);
    const failed = t.addReport(
      report(rows, 0, { 1: { row: rows[1]!, status: 'rejected', code: 'ACCOUNT_NOT_FOUND', message: 'no', replayed: false } }),
    );
    expect(failed).toEqual([{ line: 3, address: A, points: '1', code: 'ACCOUNT_NOT_FOUND', reason: 'no' }]);
    const s = summary(t, { failedFile: 'credits.csv.failed.csv' });
    expect(summaryText(s)).toMatch(/^Credited credits\.csv to quest 7, except 1 row \(see credits\.csv\.failed\.csv\)\n/);
    expect(closingHint(s)).toMatch(
      /^The rows not credited are listed in credits\.csv\.failed\.csv with their lines, codes and reasons; running the same command .* again changes nothing for them\./,
    );
    const none = new Tally();
    none.addReport({
      ...report([], 0),
      batch: null,
      results: rows.map((row) => ({ row, status: 'invalid' as const, reason: 'bad' })),
    });
    expect(summaryText(summary(none))).toMatch(
      /^Nothing credited: none of the 3 rows of credits\.csv could be credited to quest 7\n/,
    );
  });

  it("every row not credited has its reason beside its file line: the reader's for a refused row, the service's for a rejected one", () => {
    const t = new Tally();
    const rows = items(2);
    const bad: CreditCsvRow = {
      line: 8,
      address: '',
      points: '1',
      cells: { address: 'oops', points: '1' },
      reason: 'the address is not 0x followed by 40 hexadecimal digits',
    };
    const failed = t.addReport({
      ...report(rows, 0),
      results: [
        {
          row: rows[0]!,
          status: 'rejected',
          code: 'ACCOUNT_NOT_FOUND',
          message: 'No account exists for this pass address.',
          replayed: false,
        },
        { row: rows[1]!, status: 'credited', payout: PAYOUT, replayed: false },
        { row: bad, status: 'invalid', reason: 'address must be 0x followed by 40 hexadecimal digits' },
        { row: { line: 9, address: A, points: '1.5' }, status: 'invalid', reason: 'points must be a positive integer' },
      ],
    });
    expect(failed).toEqual([
      { line: 2, address: A, points: '1', code: 'ACCOUNT_NOT_FOUND', reason: 'No account exists for this pass address.' },
      {
        line: 8,
        address: 'oops',
        points: '1',
        code: 'INVALID_ROW',
        reason: 'the address is not 0x followed by 40 hexadecimal digits',
      },
      { line: 9, address: A, points: '1.5', code: 'INVALID_ROW', reason: 'points must be a positive integer' },
    ]);
  });

  it('a first run reads as credited', () => {
    const t = new Tally();
    t.addReport(report(items(3), 0));
    const text = summaryText(summary(t));
    expect(text).toMatch(/^Credited credits\.csv to quest 7\n/);
    expect(text).toMatch(/succeeded +3 \(newly credited\)/);
    expect(closingHint(summary(t))).toBeUndefined();
  });
});

describe('--batch-size guidance: one story', () => {
  const refused = (status: number, code: QuestError['code'], message: string, details?: unknown) =>
    new QuestError(code, message, { status, details, retryable: false });
  const reused = (details: unknown) =>
    refused(400, 'IDEMPOTENCY_KEY_REUSED', 'This Idempotency-Key was already used with a different request body.', details);

  it('a refused batch 1 names the size the file was first credited with, and the closing hint names the same one', () => {
    const stop = refusalStop(reused({ total: 2500 }), batchOf(0, items(999)), { questId: 7, batchSize: 999 });
    expect(stop.code).toBe('IDEMPOTENCY_KEY_REUSED');
    expect(stop.firstRun).toEqual({ size: 2500, typed: true });
    expect(stop.message).toMatch(/^batch 1 \(CSV lines 2–1,000\) was refused with 400 IDEMPOTENCY_KEY_REUSED: /);
    expect(stop.message).toMatch(/credited to quest 7 before with --batch-size 2500; re-run with --batch-size 2500/);
    const s = summary(new Tally(), { batchSize: 999, error: stop });
    expect(closingHint(s)).toMatch(/^Re-run with --batch-size 2500, /);
    expect(summaryText(s)).toMatch(/Re-run with --batch-size 2500/);
    expect(summaryText(s)).not.toMatch(/--batch-size 999\b.*to finish/);
    expect(summaryJson(s)).toMatchObject({ error: { code: 'IDEMPOTENCY_KEY_REUSED', batchSize: 2500 } });
  });

  it('after a run with the default size, the hints name no --batch-size (not the size batch 1 happened to have)', () => {
    // The first run used the default (5,000) on a file of 996 valid rows: the service recorded
    // batch 1 with 996 rows. A re-run with --batch-size 500 is refused on batch 1.
    const stop = refusalStop(reused({ total: 996 }), batchOf(0, items(500)), { questId: 7, batchSize: 500, validRows: 996 });
    expect(stop.message).not.toMatch(/--batch-size 996/);
    expect(stop.message).toMatch(
      /credited to quest 7 before without --batch-size; re-run without --batch-size \(nothing was credited twice\)$/,
    );
    const s = summary(new Tally(), { batchSize: 500, batchSizeGiven: true, error: stop });
    expect(closingHint(s)).toMatch(/^Re-run without --batch-size, as credits\.csv was first credited: /);
    expect(summaryJson(s)).toMatchObject({ error: { batchSize: 5000 } });
    // Batch 1 recorded with the default's 5,000 rows: the default again, not "--batch-size 5000".
    const full = refusalStop(reused({ total: 5000 }), batchOf(0, items(999)), { questId: 7, batchSize: 999 });
    expect(full.message).toMatch(/before without --batch-size; re-run without --batch-size/);
    // A file with more valid rows than batch 1 held was cut at exactly that size: it is named.
    const cut = refusalStop(reused({ total: 996 }), batchOf(0, items(500)), { questId: 7, batchSize: 500, validRows: 997 });
    expect(cut.message).toMatch(/re-run with --batch-size 996 \(nothing/);
    // And a stop that a re-run gets past repeats only what the operator typed.
    const again = (batchSizeGiven: boolean) =>
      closingHint(summary(new Tally(), { batchSize: 5000, batchSizeGiven, error: new CreditStop('API_UNAVAILABLE', 'x') }));
    expect(again(false)).toBe('Re-run the same command (same file) to finish: completed batches are not credited again.');
    expect(again(true)).toBe(
      'Re-run the same command (same file, --batch-size 5000) to finish: completed batches are not credited again.',
    );
  });

  it('without the size from the API, neither message tells the operator to keep the size that was refused', () => {
    const stop = refusalStop(reused(undefined), batchOf(0, items(10)), { questId: 7, batchSize: 10 });
    expect(stop.firstRun).toBeUndefined();
    expect(stop.message).toMatch(/with a --batch-size other than 10; re-run with that size/);
    expect(closingHint(summary(new Tally(), { batchSize: 10, error: stop }))).toMatch(
      /^Re-run with the --batch-size credits\.csv was first credited with \(not 10\)/,
    );
  });

  it('a stop that a re-run gets past says to re-run with the same --batch-size, naming it', () => {
    for (const code of ['API_UNAVAILABLE', 'STALLED', 'INTERRUPTED', 'ALLOCATION_FAILED']) {
      expect(closingHint(summary(new Tally(), { batchSize: 5, error: new CreditStop(code, 'x') })), code).toBe(
        'Re-run the same command (same file, --batch-size 5) to finish: completed batches are not credited again.',
      );
    }
  });

  it('advises a re-run only where it helps: a wrong key needs another key, an unknown quest nothing', () => {
    const stop = refusalStop(refused(401, 'INVALID_API_KEY', 'bad key'), batchOf(2, items(5, 20)), { questId: 7, batchSize: 5 });
    expect(stop.message).toMatch(/^batch 3 \(CSV lines 20–24\) was refused with 401 INVALID_API_KEY: bad key$/);
    expect(closingHint(summary(new Tally(), { batchSize: 5, error: stop }))).toBe(
      'Use an active API key of the owner of quest 7 (quest-admin key list); with it, the same command (same file, --batch-size 5) finishes the file: completed batches are not credited again.',
    );
    for (const code of ['QUEST_NOT_FOUND', 'VALIDATION_FAILED', 'FILE_CHANGED', 'INTERNAL_ERROR']) {
      const text = summaryText(summary(new Tally(), { batchSize: 5, error: new CreditStop(code, 'x') }));
      expect(text, code).not.toMatch(/[Rr]e-?run|again/);
    }
  });

  it('a malformed line after credited batches: never re-run the edited file, credit the rest from a new one', () => {
    const t = new Tally();
    t.addReport(report(items(2), 0));
    const hint = closingHint(summary(t, { error: new CreditStop('INVALID_CSV', 'credits.csv: line 9: …') }));
    expect(hint).toBe(
      'Lines up to 3 are done. Do not re-run an edited credits.csv: its batches would get new keys and be credited again. Put the lines after line 3, corrected, in a new file and credit that.',
    );
    expect(closingHint(summary(new Tally(), { error: new CreditStop('INVALID_CSV', 'x') }))).toBe(
      'Fix the file and run again: nothing was credited.',
    );
  });

  it('a VALIDATION_FAILED answer is traced to its CSV line', () => {
    const stop = refusalStop(
      refused(400, 'VALIDATION_FAILED', 'bad', [{ path: 'allocations.3.points' }]),
      batchOf(0, items(5, 2)),
      { questId: 7, batchSize: 5 },
    );
    expect(stop.line).toBe(5);
    expect(stop.message).toMatch(/\(CSV line 5\)/);
  });

  it('finds the item a VALIDATION_FAILED answer names', () => {
    expect(itemIndexFromDetails([{ location: 'body', path: 'allocations.37.address' }])).toBe(37);
    expect(itemIndexFromDetails([{ path: 'allocations' }, { path: 'allocations.2' }])).toBe(2);
    expect(itemIndexFromDetails([{ path: 'limit' }])).toBeUndefined();
    expect(itemIndexFromDetails(undefined)).toBeUndefined();
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
