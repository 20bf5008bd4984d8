import type { Readable } from 'node:stream';
import { passAddressLowerSchema } from '@quest/domain';
import { stringify } from 'csv-stringify/sync';
import { readCsv } from './read.ts';

/**
 * A credit file: the reader's rules (read.ts) with the columns `address` and `points`, and the
 * reasons a row of it is refused — the same words in quest-admin's failed-rows file and the
 * console's refusal.
 */

export const CREDIT_COLUMNS = ['address', 'points'] as const;

export const CREDIT_REASONS = {
  noAddress: 'the address is missing',
  badAddress: 'the address is not 0x followed by 40 hexadecimal digits',
  noPoints: 'the points are missing',
  badPoints: 'the points are not a whole number (digits only)',
  zeroPoints: 'the points must be at least 1',
  hugePoints: `the points must be at most ${Number.MAX_SAFE_INTEGER}`,
} as const;

export type CreditCheck = { ok: true; address: `0x${string}`; points: number } | { ok: false; reason: string };

/** Check a row's cells: an address in any letter case (answered lower-cased) and a whole number of points, 1 or more. */
export function checkCreditCells(cells: { address: string; points: string }): CreditCheck {
  if (cells.address === '') return { ok: false, reason: CREDIT_REASONS.noAddress };
  const address = passAddressLowerSchema.safeParse(cells.address);
  if (!address.success) return { ok: false, reason: CREDIT_REASONS.badAddress };
  if (cells.points === '') return { ok: false, reason: CREDIT_REASONS.noPoints };
  if (!/^\d+$/.test(cells.points)) return { ok: false, reason: CREDIT_REASONS.badPoints };
  const points = Number(cells.points);
  if (points < 1) return { ok: false, reason: CREDIT_REASONS.zeroPoints };
  if (!Number.isSafeInteger(points)) return { ok: false, reason: CREDIT_REASONS.hugePoints };
  return { ok: true, address: address.data, points };
}

/** A row of a credit file: its cells as written (trimmed), and either its credit or why it is refused. */
export interface CreditCsvRow {
  line: number;
  bytes: number;
  address: string;
  points: string;
  credit?: { address: `0x${string}`; points: number };
  reason?: string;
}

/** Stream a credit file's rows, each checked. Throws CsvError for a file that cannot be read. */
export async function* readCreditCsv(input: Readable): AsyncGenerator<CreditCsvRow> {
  for await (const { line, bytes, cells, problem } of readCsv(input, { required: CREDIT_COLUMNS })) {
    const row: CreditCsvRow = { line, bytes, address: cells.address, points: cells.points };
    const check: CreditCheck = problem ? { ok: false, reason: problem } : checkCreditCells(cells);
    if (check.ok) row.credit = { address: check.address, points: check.points };
    else row.reason = check.reason;
    yield row;
  }
}

/**
 * The columns of a failed-rows file, quest-admin's and the console's: the row's file line, its
 * cells (so the file is itself a credit file), the code, and the reason in words.
 */
export const FAILED_ROW_COLUMNS = ['line', 'address', 'points', 'code', 'reason'] as const;

/** The code of a row refused by the checks here, before anything is sent. */
export const INVALID_ROW = 'INVALID_ROW';

export interface FailedRow {
  line: number;
  address: string;
  points: string | number;
  code: string;
  reason: string;
}

/** Failed rows as cells, in FAILED_ROW_COLUMNS order. */
export const failedRowCells = (r: FailedRow) => [r.line, r.address, r.points, r.code, r.reason];

/** A whole failed-rows file, header included (for the console's small ones; the CLI streams its own). */
export function failedRowsCsv(rows: readonly FailedRow[]): string {
  return stringify(rows.map(failedRowCells), { header: true, columns: [...FAILED_ROW_COLUMNS] });
}
