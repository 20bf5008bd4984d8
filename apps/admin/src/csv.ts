import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { Parser, parse } from 'csv-parse';
import type { ImportRow } from '@quest/db/accounts';
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
  /** Bytes of the file parsed up to the end of this row (for progress); optional for callers that build rows by hand. */
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

/**
 * csv-parse's `info: true` builds an info object per record (~10 µs a row, more than the parsing
 * itself). The parser's own `info` counters are current whenever it pushes a record, so this
 * subclass pairs each record with its line and byte position at that moment, for nothing.
 */
class NumberedParser extends Parser {
  /** Where the last record ended: its line, and the byte offset after its line break (0, 0 before any). */
  lastLine = 0;
  lastBytes = 0;

  override push(record: unknown, encoding?: BufferEncoding): boolean {
    if (record === null) return super.push(null, encoding);
    this.lastLine = this.info.lines;
    this.lastBytes = this.info.bytes;
    return super.push({ record, line: this.info.lines, bytes: this.info.bytes }, encoding);
  }
}

/**
 * The line on which the record after byte `afterBytes` starts (the one after line `afterLine`,
 * past blank lines). csv-parse reports an unclosed quote where the parsing ended — the file's last
 * line — so the line where the quoted field opened is found here, by reading from that record on.
 */
async function startLineOfRecordAfter(path: string, afterLine: number, afterBytes: number): Promise<number> {
  let line = afterLine + 1;
  for await (const chunk of createReadStream(path, { start: afterBytes, highWaterMark: 1 << 16 })) {
    for (const byte of chunk as Buffer) {
      if (byte === 0x0a) line++;
      else if (byte !== 0x20 && byte !== 0x09 && byte !== 0x0d) return line;
    }
  }
  return line;
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
 * Stream a credit CSV: a header naming an `address` and a `points` column (any order, any case;
 * other columns ignored), then one row per credit. The bytes are hashed as they stream by, so the
 * digest of what was parsed costs no second read. Memory stays at the parser's buffer, whatever
 * the file size.
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
    const numbered = new NumberedParser({ bom: true, trim: true, skip_empty_lines: true, relax_column_count: true });
    const parser = source.pipe(numbered);
    source.on('error', (error) => parser.destroy(error));
    let address = -1;
    let points = -1;
    try {
      for await (const { record, line, bytes: at } of parser as AsyncIterable<{
        record: string[];
        line: number;
        bytes: number;
      }>) {
        if (address < 0) {
          const names = record.map((name) => name.trim().toLowerCase());
          address = names.indexOf('address');
          points = names.indexOf('points');
          if (address < 0 || points < 0) {
            throw new CliError(
              'INVALID_CSV',
              `${path}: the first line must be a header with "address" and "points" columns (got: ${record.join(',').slice(0, 200)})`,
            );
          }
          continue;
        }
        yield { line, address: record[address] ?? '', points: record[points] ?? '', bytes: at };
      }
    } catch (error) {
      if ((error as { code?: string }).code === 'CSV_QUOTE_NOT_CLOSED') {
        const line = await startLineOfRecordAfter(path, numbered.lastLine, numbered.lastBytes);
        throw new CliError('INVALID_CSV', `${path}: line ${line}: a quote opened on this line is never closed`);
      }
      throw asCliError(path, error);
    } finally {
      source.destroy();
    }
    if (address < 0) throw new CliError('INVALID_CSV', `${path}: the file is empty; expected a header line "address,points"`);
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

/** One data row of a CSV read by its header's column names: the cells asked for, trimmed ('' when absent). */
export interface ColumnsCsvRow<C extends string> {
  /** 1-based line number on which the row ends (the header is line 1). */
  line: number;
  cells: Record<C, string>;
  /** Bytes of the file parsed up to the end of this row (for progress). */
  bytes: number;
}

/**
 * Stream a CSV whose header names the `required` columns (and maybe the `optional` ones): any order,
 * any case, other columns ignored. Like openCreditCsv, one pass, memory at the parser's buffer.
 */
export async function openColumnsCsv<R extends string, O extends string = never>(
  path: string,
  columns: { required: readonly R[]; optional?: readonly O[] },
): Promise<{ size: number; rows: AsyncIterable<ColumnsCsvRow<R | O>> }> {
  const size = await inputFileSize(path);
  const wanted: readonly (R | O)[] = [...columns.required, ...(columns.optional ?? [])];
  const expected = columns.required.map((c) => `"${c}"`).join(' and ');
  async function* rows(): AsyncGenerator<ColumnsCsvRow<R | O>> {
    const source = createReadStream(path, { highWaterMark: 1 << 18 });
    const numbered = new NumberedParser({ bom: true, trim: true, skip_empty_lines: true, relax_column_count: true });
    const parser = source.pipe(numbered);
    source.on('error', (error) => parser.destroy(error));
    let index: number[] | undefined;
    try {
      for await (const { record, line, bytes } of parser as AsyncIterable<{ record: string[]; line: number; bytes: number }>) {
        if (!index) {
          const names = record.map((name) => name.trim().toLowerCase());
          index = wanted.map((c) => names.indexOf(c));
          if (columns.required.some((_, i) => index![i]! < 0)) {
            throw new CliError(
              'INVALID_CSV',
              `${path}: the first line must be a header with ${expected} ${columns.required.length > 1 ? 'columns' : 'column'} (got: ${record.join(',').slice(0, 200)})`,
            );
          }
          continue;
        }
        const cells = {} as Record<R | O, string>;
        wanted.forEach((c, i) => {
          cells[c] = index![i]! < 0 ? '' : (record[index![i]!] ?? '');
        });
        yield { line, cells, bytes };
      }
    } catch (error) {
      if ((error as { code?: string }).code === 'CSV_QUOTE_NOT_CLOSED') {
        const line = await startLineOfRecordAfter(path, numbered.lastLine, numbered.lastBytes);
        throw new CliError('INVALID_CSV', `${path}: line ${line}: a quote opened on this line is never closed`);
      }
      throw asCliError(path, error);
    } finally {
      source.destroy();
    }
    if (!index) throw new CliError('INVALID_CSV', `${path}: the file is empty; expected a header line with ${expected}`);
  }
  return { size, rows: rows() };
}
