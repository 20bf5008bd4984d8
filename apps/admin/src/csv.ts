import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { CsvError, type CsvColumns, readAccountCsv, readCreditCsv, readCsv } from '@quest/csv';
import type { ImportRow } from '@quest/db/accounts';
import { CliError } from './context.ts';

/**
 * quest-admin's input files, read by @quest/csv (its rules: line 1 is the header, every later line
 * one row numbered by its file line, the reasons a row is refused). This module adds the file:
 * its size for progress, read errors and unreadable CSV as CLI errors, and the credit file's hash.
 */

/** Size of an input file, or a readable CLI error when it is missing or not a regular file. */
async function inputFileSize(path: string): Promise<number> {
  try {
    const info = await stat(path);
    if (!info.isFile()) throw new Error('not a regular file');
    return info.size;
  } catch (error) {
    throw new CliError('FILE_NOT_READABLE', `cannot read ${path}: ${(error as Error).message}`);
  }
}

/** A failure while streaming a CSV, as the CLI reports it: a file the reader refuses, or an unreadable one. */
function asCliError(path: string, error: unknown): CliError {
  if (error instanceof CliError) return error;
  if (error instanceof CsvError) return new CliError('INVALID_CSV', `${path}: ${error.message}`);
  return new CliError('FILE_NOT_READABLE', `cannot read ${path}: ${(error as Error).message}`);
}

export interface AccountCsv {
  /** File size in bytes, for progress. */
  size: number;
  /** Bytes parsed so far. */
  bytesRead(): number;
  rows: AsyncIterable<ImportRow>;
}

/** Stream the `pass` column of an accounts CSV (ACCOUNT_COLUMNS of @quest/csv), each row with its line. */
export async function openAccountCsv(path: string): Promise<AccountCsv> {
  const size = await inputFileSize(path);
  let bytes = 0;
  async function* rows(): AsyncGenerator<ImportRow> {
    try {
      for await (const row of readAccountCsv(createReadStream(path))) {
        bytes = row.bytes;
        yield { line: row.line, value: row.value };
      }
    } catch (error) {
      throw asCliError(path, error);
    }
  }
  return { size, bytesRead: () => bytes, rows: rows() };
}

/** One row of a credit CSV as creditMany takes it. */
export interface CreditCsvRow {
  /** The row's file line (the header is line 1). */
  line: number;
  /** What creditMany checks and sends: the address cell, or '' for a refused row so that it is reported invalid in its place. */
  address: string;
  points: string;
  /** The cells as the file has them, for the failed-rows file (absent: `address` and `points` are). */
  cells?: { address: string; points: string };
  /** Why @quest/csv refused the row; creditMany's own reason is used only when this is absent. */
  reason?: string;
  /** Bytes of the file parsed up to the end of this row (for progress); optional for rows built by hand. */
  bytes?: number;
}

export interface CreditCsv {
  /** File size in bytes, for progress. */
  size: number;
  /** Bytes read so far. */
  bytesRead(): number;
  /** SHA-256 (hex) of every byte of the file; complete once `rows` has been read to the end. */
  sha256(): string;
  rows: AsyncIterable<CreditCsvRow>;
}

/** SHA-256 (hex) of a file's bytes: one sequential read, no parsing (~10 ms per 5 MB). */
export async function fileSha256(path: string): Promise<string> {
  await inputFileSize(path);
  const hash = createHash('sha256');
  try {
    for await (const chunk of createReadStream(path, { highWaterMark: 1 << 20 })) hash.update(chunk as Buffer);
  } catch (error) {
    throw asCliError(path, error);
  }
  return hash.digest('hex');
}

/**
 * Stream a credit CSV (`address`, `points`). The bytes are hashed as they stream by, so the digest
 * of what was parsed costs no second read. Memory stays at one row, whatever the file size.
 */
export async function openCreditCsv(path: string): Promise<CreditCsv> {
  const size = await inputFileSize(path);
  const hash = createHash('sha256');
  let digest: string | undefined;
  let bytes = 0;
  async function* rows(): AsyncGenerator<CreditCsvRow> {
    const source = createReadStream(path, { highWaterMark: 1 << 18 });
    source.on('data', (chunk) => {
      hash.update(chunk);
      bytes += chunk.length;
    });
    source.on('end', () => {
      digest = hash.digest('hex');
    });
    // One loop, the reader's errors caught here: every generator between the parser and
    // creditMany costs a few microseconds a row, which a file of 100,000s of rows feels.
    try {
      for await (const row of readCreditCsv(source)) {
        const { line, address, points, bytes: at, reason } = row;
        if (reason === undefined) yield { line, address, points, bytes: at };
        else yield { line, address: '', points, cells: { address, points }, reason, bytes: at };
      }
    } catch (error) {
      throw asCliError(path, error);
    }
  }
  return {
    size,
    bytesRead: () => bytes,
    sha256: () => {
      if (digest === undefined) throw new Error('the file has not been read to the end yet');
      return digest;
    },
    rows: rows(),
  };
}

/** The rows of a credit file that are sent (not refused), counted up to `limit`. */
export async function countCreditRows(path: string, limit: number): Promise<number> {
  let valid = 0;
  for await (const row of (await openCreditCsv(path)).rows) {
    if (row.reason === undefined && ++valid >= limit) break;
  }
  return valid;
}

/** One data row of a CSV read by its header's column names: the cells asked for, trimmed ('' when absent). */
export interface ColumnsCsvRow<C extends string> {
  /** The row's file line (the header is line 1). */
  line: number;
  /** '' in every cell for a row the reader refuses (a blank line), so that the caller's checks refuse it too. */
  cells: Record<C, string>;
  /** Bytes of the file parsed up to the end of this row (for progress). */
  bytes: number;
}

/** Stream a CSV whose header names the `required` columns (and maybe the `optional` ones), one row at a time. */
export async function openColumnsCsv<R extends string, O extends string = never>(
  path: string,
  columns: CsvColumns<R, O>,
): Promise<{ size: number; rows: AsyncIterable<ColumnsCsvRow<R | O>> }> {
  const size = await inputFileSize(path);
  async function* rows(): AsyncGenerator<ColumnsCsvRow<R | O>> {
    try {
      for await (const { line, cells, bytes, problem } of readCsv(createReadStream(path, { highWaterMark: 1 << 18 }), columns)) {
        if (problem) for (const column of Object.keys(cells) as (R | O)[]) cells[column] = '';
        yield { line, cells, bytes };
      }
    } catch (error) {
      throw asCliError(path, error);
    }
  }
  return { size, rows: rows() };
}
