import { Readable } from 'node:stream';
import { CsvError, FIRST_ROW_LINE, failedRowsCsv, readAccountCsv, readCreditCsv } from '@quest/csv';
import { DEFAULT_MESSAGE, DomainError, type ErrorCode } from '@quest/domain';

/**
 * The console's uploads, read by @quest/csv like quest-admin's files: line 1 is the header, every
 * later line one row, numbered by its file line, refused for the same reasons in the same words.
 */

/** Refused rows named in a refusal's message, and listed in its details. */
const NAMED = 5;
const LISTED = 100;

/** A file the reader cannot read at all (no header, a quote never closed) as a 400, naming the line. */
function unreadable(error: unknown): unknown {
  return error instanceof CsvError
    ? new DomainError('VALIDATION_FAILED', `The file cannot be read: ${error.message}; nothing was credited.`, [
        { line: error.line, reason: error.message.replace(/^line \d+: /, '') },
      ])
    : error;
}

/**
 * A credit upload (`address`, `points`). Any refused row refuses the whole file, naming the first
 * few lines, before anything is credited: a half-read file is worse than none. So a file taken has
 * its rows on consecutive lines after the header, and item i of its batch is on line FIRST_ROW_LINE + i
 * (failedRowsOfUpload relies on it). How many rows a batch may have is the batch command's rule.
 */
export async function parseCreditCsv(text: string): Promise<{ address: `0x${string}`; points: number }[]> {
  const items: { address: `0x${string}`; points: number }[] = [];
  const bad: { line: number; reason: string }[] = [];
  try {
    for await (const row of readCreditCsv(Readable.from([text]))) {
      if (row.credit && bad.length === 0) items.push(row.credit);
      if (row.reason !== undefined) bad.push({ line: row.line, reason: row.reason });
    }
  } catch (error) {
    throw unreadable(error);
  }
  if (bad.length > 0) {
    const first = bad
      .slice(0, NAMED)
      .map((b) => `line ${b.line}: ${b.reason}`)
      .join('; ');
    throw new DomainError(
      'VALIDATION_FAILED',
      `The file has ${bad.length} bad row${bad.length === 1 ? '' : 's'} (${first}${bad.length > NAMED ? '; …' : ''}); nothing was credited.`,
      bad.slice(0, LISTED),
    );
  }
  if (items.length === 0) throw new DomainError('VALIDATION_FAILED', 'The file has no rows to credit.');
  return items;
}

/**
 * The failed-rows CSV of an upload's batch: @quest/csv's columns (line, address, points, code,
 * reason), each row at the file line it had in the upload.
 */
export function failedRowsOfUpload(
  rejected: readonly { index: number; address: string; points: number; code: string }[],
): string {
  return failedRowsCsv(
    rejected.map((r) => ({
      line: FIRST_ROW_LINE + r.index,
      address: r.address,
      points: r.points,
      code: r.code,
      reason: DEFAULT_MESSAGE[r.code as ErrorCode] ?? r.code,
    })),
  );
}

/** An accounts upload (a `pass` or `address` column): its rows with their file lines, for importAccounts. */
export async function parseAccountCsv(text: string): Promise<{ line: number; value: string }[]> {
  const rows: { line: number; value: string }[] = [];
  try {
    for await (const { line, value } of readAccountCsv(Readable.from([text]))) rows.push({ line, value });
  } catch (error) {
    throw unreadable(error);
  }
  return rows;
}
