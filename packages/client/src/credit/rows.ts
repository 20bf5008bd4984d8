/** One credit of a creditMany input, and the checks the API's batch validation makes on it, made locally. */

/** What creditMany needs of a row; any other fields ride along and come back in its result. */
export interface CreditRow {
  /** Pass address: 0x + 40 hex digits, any case (the service checksums it). */
  address: string;
  /** A positive integer: a number, or its decimal digits (as read from a file). */
  points: number | string;
}

export type RowCheck = { ok: true; points: number } | { ok: false; reason: string };

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

/**
 * The batch endpoint refuses a whole batch for one malformed item (VALIDATION_FAILED), so rows are
 * checked here first and a bad one is reported `invalid` without being sent. Points written as
 * text must be plain digits: `1e3`, `1.0`, `+5`, `0x10` are refused rather than guessed.
 */
export function checkCreditRow(row: CreditRow): RowCheck {
  if (typeof row.address !== 'string' || !ADDRESS.test(row.address))
    return { ok: false, reason: 'address must be 0x followed by 40 hexadecimal digits' };
  let points: number;
  if (typeof row.points === 'number') points = row.points;
  else if (typeof row.points === 'string' && /^\d+$/.test(row.points)) points = Number(row.points);
  else return { ok: false, reason: 'points must be a positive integer' };
  if (!Number.isInteger(points)) return { ok: false, reason: 'points must be a positive integer' };
  if (points < 1) return { ok: false, reason: 'points must be at least 1' };
  if (!Number.isSafeInteger(points)) return { ok: false, reason: `points must be at most ${Number.MAX_SAFE_INTEGER}` };
  return { ok: true, points };
}
