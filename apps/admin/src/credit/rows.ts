import type { CreditCsvRow } from '../csv.ts';

/** One CSV row: local validation, and the shapes batches and the failed-rows file are made of. */

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

export type RowCheck = { ok: true; points: number } | { ok: false; reason: string };

/**
 * The checks the API's batch validation makes on one item, made locally: `0x` + 40 hex digits in
 * any letter case (the service checksums it), and points a positive integer that is exact as a
 * JSON number. Written digits only: `1e3`, `1.0`, `+5`, `0x10` are refused rather than guessed.
 */
export function checkCreditRow(row: { address: string; points: string }): RowCheck {
  if (!ADDRESS.test(row.address)) return { ok: false, reason: 'address must be 0x followed by 40 hexadecimal digits' };
  if (!/^\d+$/.test(row.points)) return { ok: false, reason: 'points must be a positive integer' };
  const points = Number(row.points);
  if (points < 1) return { ok: false, reason: 'points must be at least 1' };
  if (!Number.isSafeInteger(points)) return { ok: false, reason: `points must be at most ${Number.MAX_SAFE_INTEGER}` };
  return { ok: true, points };
}

export interface CreditItem {
  line: number;
  /** As in the file (trimmed); sent as is, the service checksums it. */
  address: string;
  points: number;
  /** The points cell as in the file, for the failed-rows CSV. */
  pointsText: string;
}

export interface FailedRow {
  line: number;
  address: string;
  points: string;
  code: string;
}

export const invalidRow = (row: CreditCsvRow): FailedRow => ({
  line: row.line,
  address: row.address,
  points: row.points,
  code: 'INVALID_ROW',
});

/** Merge two lists already in line order. */
export function mergeByLine(a: readonly FailedRow[], b: readonly FailedRow[]): FailedRow[] {
  const out: FailedRow[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (j >= b.length || (i < a.length && a[i]!.line <= b[j]!.line)) out.push(a[i++]!);
    else out.push(b[j++]!);
  }
  return out;
}
