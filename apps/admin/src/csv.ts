import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { parse } from 'csv-parse';
import type { ImportRow } from '@quest/db';
import { CliError } from './context.ts';

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

/** A failure while streaming a CSV, as the CLI reports it: malformed CSV, or an unreadable file. */
function asCliError(path: string, error: unknown): CliError {
  if (error instanceof CliError) return error;
  const code = (error as { code?: string }).code;
  if (code?.startsWith('CSV_')) return new CliError('INVALID_CSV', `${path}: ${(error as Error).message}`);
  return new CliError('FILE_NOT_READABLE', `cannot read ${path}: ${(error as Error).message}`);
}

export interface AccountCsv {
  /** File size in bytes, for progress. */
  size: number;
  /** Bytes parsed so far. */
  bytesRead(): number;
  rows: AsyncIterable<ImportRow>;
}

/**
 * Stream the `pass` column of an accounts CSV. The first line is the header and must name a
 * `pass` column (other columns are ignored); each later non-empty line yields one row with its
 * line number. Nothing is held beyond the parser's buffer, whatever the file size.
 */
export async function openAccountCsv(path: string): Promise<AccountCsv> {
  const size = await inputFileSize(path);
  let bytes = 0;
  async function* rows(): AsyncGenerator<ImportRow> {
    const source = createReadStream(path);
    const parser = source.pipe(
      parse({ bom: true, info: true, trim: true, skip_empty_lines: true, relax_column_count: true, relax_quotes: true }),
    );
    // pipe() does not forward a read error; without this the loop below would wait forever.
    source.on('error', (error) => parser.destroy(error));
    let column = -1;
    try {
      for await (const { record, info } of parser as AsyncIterable<{
        record: string[];
        info: { lines: number; bytes: number };
      }>) {
        bytes = info.bytes;
        if (column < 0) {
          column = record.findIndex((name) => name.trim().toLowerCase() === 'pass');
          if (column < 0) {
            throw new CliError(
              'INVALID_CSV',
              `${path}: the first line must be a header with a "pass" column (got: ${record.join(',')})`,
            );
          }
          continue;
        }
        yield { line: info.lines, value: record[column] ?? '' };
      }
    } catch (error) {
      throw asCliError(path, error);
    } finally {
      source.destroy();
    }
    if (column < 0) throw new CliError('INVALID_CSV', `${path}: the file is empty; expected a header line "pass"`);
  }
  return { size, bytesRead: () => bytes, rows: rows() };
}

/** One data row of a credit CSV, as the file has it (trimmed); the caller validates it. */
export interface CreditCsvRow {
  /** 1-based line number on which the row ends (the header is line 1). */
  line: number;
  address: string;
  points: string;
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

/**
 * Stream a credit CSV: a header naming an `address` and a `points` column (any order, any case;
 * other columns ignored), then one row per credit. The bytes are hashed as they stream by, so the
 * file's digest costs no second read. Memory stays at the parser's buffer, whatever the file size.
 */
export async function openCreditCsv(path: string): Promise<CreditCsv> {
  const size = await inputFileSize(path);
  const hash = createHash('sha256');
  let digest: string | undefined;
  let bytes = 0;
  async function* rows(): AsyncGenerator<CreditCsvRow> {
    const source = createReadStream(path);
    source.on('data', (chunk) => {
      hash.update(chunk);
      bytes += chunk.length;
    });
    source.on('end', () => {
      digest = hash.digest('hex');
    });
    const parser = source.pipe(parse({ bom: true, info: true, trim: true, skip_empty_lines: true, relax_column_count: true }));
    source.on('error', (error) => parser.destroy(error));
    let columns: { address: number; points: number } | undefined;
    try {
      for await (const { record, info } of parser as AsyncIterable<{ record: string[]; info: { lines: number } }>) {
        if (!columns) {
          const names = record.map((name) => name.trim().toLowerCase());
          columns = { address: names.indexOf('address'), points: names.indexOf('points') };
          if (columns.address < 0 || columns.points < 0) {
            throw new CliError(
              'INVALID_CSV',
              `${path}: the first line must be a header with "address" and "points" columns (got: ${record.join(',').slice(0, 200)})`,
            );
          }
          continue;
        }
        yield { line: info.lines, address: record[columns.address] ?? '', points: record[columns.points] ?? '' };
      }
    } catch (error) {
      throw asCliError(path, error);
    } finally {
      source.destroy();
    }
    if (!columns) throw new CliError('INVALID_CSV', `${path}: the file is empty; expected a header line "address,points"`);
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
