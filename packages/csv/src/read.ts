import type { Readable } from 'node:stream';
import { CsvError as ParseError, Parser } from 'csv-parse';

/**
 * The one CSV reader of quest-admin and the console. Its rules:
 *
 * - Line 1 is the header. It names the columns (any order, any letter case; surrounding spaces and
 *   a UTF-8 BOM are ignored), and must name every required one; columns it does not ask for are
 *   ignored. A file without a header — whose first line is data — is refused whole, naming the
 *   columns expected: nothing is guessed.
 * - Every later line is one row, numbered by its file line (1-based, the header being line 1), so
 *   a row's number is the line an editor shows for it.
 * - A blank line between rows is a refused row ("the line is empty"); blank lines at the end of the
 *   file are not rows. A row whose quoted cell holds a line break is refused too: one row, one line.
 * - A line the CSV syntax cannot read (a quote never closed, text after a closing quote, a row over
 *   MAX_ROW_CHARS) stops the read with a CsvError naming the line where that row starts.
 *
 * Rows are read as they stream in: memory holds one row (at most MAX_ROW_CHARS), whatever the size.
 */

/** Longest row, in characters: longer stops the read (most often a quote never closed, swallowing the file). */
export const MAX_ROW_CHARS = 65_536;

/** The line of a file's first row: the header is line 1. */
export const FIRST_ROW_LINE = 2;

export type CsvErrorCode = 'CSV_EMPTY' | 'CSV_HEADER' | 'CSV_SYNTAX';

/** Why a file cannot be read at all; `line` is where (1 for the header). The message starts "line N: ". */
export class CsvError extends Error {
  constructor(
    readonly code: CsvErrorCode,
    readonly line: number,
    reason: string,
  ) {
    super(`line ${line}: ${reason}`);
    this.name = 'CsvError';
  }
}

/** The reasons a row is refused before its cells are looked at (the cells' own reasons are with their checks). */
export const ROW_REASONS = {
  empty: 'the line is empty',
  multiline: (from: number, to: number) => `the row runs over lines ${from}–${to} (a quoted cell holds a line break)`,
} as const;

/** The columns a file must (and may) have; `aliases` are other names the header may use for a column. */
export interface CsvColumns<R extends string, O extends string = never> {
  required: readonly R[];
  optional?: readonly O[];
  aliases?: Partial<Record<R | O, readonly string[]>>;
}

export interface CsvRow<C extends string> {
  /** The file line of the row (the header is line 1). */
  line: number;
  /** The cells asked for, trimmed; '' where the row has none. */
  cells: Record<C, string>;
  /** Bytes of the input parsed through the end of this row (for progress). */
  bytes: number;
  /** Set when the row is refused whatever its cells hold (ROW_REASONS). */
  problem?: string;
}

interface Numbered {
  record: string[];
  line: number;
  bytes: number;
}

/**
 * csv-parse's `info: true` builds an info object per record (more than the parsing costs). Its own
 * counters are current whenever it pushes a record, so each record is paired with them here.
 */
class NumberedParser extends Parser {
  /** The line of the last record parsed (the reader may not have taken it yet). */
  lastLine = 0;

  override push(record: unknown, encoding?: BufferEncoding): boolean {
    if (record === null) return super.push(null, encoding);
    this.lastLine = this.info.lines;
    const numbered: Numbered = { record: record as string[], line: this.info.lines, bytes: this.info.bytes };
    return super.push(numbered, encoding);
  }
}

const quoted = (names: readonly string[]) => names.map((c) => `"${c}"`).join(' and ');

/** Where each wanted column is in the header record; a CsvError when a required one is missing. */
function headerIndex<C extends string>(record: string[], wanted: readonly C[], columns: CsvColumns<C, C>): number[] {
  const names = record.map((name) => name.trim().toLowerCase());
  const required = new Set<string>(columns.required);
  const named = columns.required.map((c) => {
    const aliases = columns.aliases?.[c] ?? [];
    return aliases.length ? `"${c}" (or ${aliases.map((a) => `"${a}"`).join(', ')})` : `"${c}"`;
  });
  const expected = `line 1 must be the header naming the ${named.length > 1 ? 'columns' : 'column'} ${named.join(' and ')}`;
  return wanted.map((column) => {
    const accepted = [column, ...(columns.aliases?.[column] ?? [])];
    const found = names.flatMap((name, i) => (accepted.includes(name) ? [i] : []));
    if (found.length > 1) throw new CsvError('CSV_HEADER', 1, `the header names the column "${column}" more than once`);
    if (found.length === 0 && required.has(column)) {
      const got = names.every((n) => n === '') ? 'it is empty' : `it is: ${record.join(',').slice(0, 200)}`;
      throw new CsvError('CSV_HEADER', 1, `${expected} (any order; other columns are ignored); ${got}`);
    }
    return found[0] ?? -1;
  });
}

/** csv-parse's refusals, in the reader's words, at the line where the unreadable row starts. */
function syntaxError(error: unknown, line: number): unknown {
  if (!(error instanceof ParseError)) return error;
  switch (error.code) {
    case 'CSV_QUOTE_NOT_CLOSED':
      return new CsvError('CSV_SYNTAX', line, 'a quote opened on this line is never closed');
    case 'CSV_MAX_RECORD_SIZE':
      return new CsvError(
        'CSV_SYNTAX',
        line,
        `the row is longer than ${MAX_ROW_CHARS.toLocaleString('en-US')} characters (a quote never closed?)`,
      );
    case 'CSV_INVALID_CLOSING_QUOTE':
    case 'CSV_NON_TRIMABLE_CHAR_AFTER_CLOSING_QUOTE':
      return new CsvError('CSV_SYNTAX', line, 'a quoted cell has text after its closing quote');
    default:
      return new CsvError('CSV_SYNTAX', line, error.message);
  }
}

const isBlank = (record: string[]) => record.length === 1 && record[0] === '';

/** Stream the rows of a CSV by the rules above. Destroys `input` when done or abandoned. */
export async function* readCsv<R extends string, O extends string = never>(
  input: Readable,
  columns: CsvColumns<R, O>,
): AsyncGenerator<CsvRow<R | O>> {
  const wanted: readonly (R | O)[] = [...columns.required, ...(columns.optional ?? [])];
  const parser = new NumberedParser({ bom: true, trim: true, relax_column_count: true, max_record_size: MAX_ROW_CHARS });
  // pipe() does not forward a read error; without this the loop below would wait forever.
  input.on('error', (error) => parser.destroy(error));
  input.pipe(parser);
  const cellsOf = (record: string[], index: readonly number[]) => {
    const cells = {} as Record<R | O, string>;
    wanted.forEach((column, i) => {
      cells[column] = record[index[i]!] ?? '';
    });
    return cells;
  };
  let index: number[] | undefined;
  /** The last line read; the first of the blank lines since the last row, not yet known to be the file's end. */
  let last = 0;
  let blankFrom = 0;
  try {
    for await (const { record, line, bytes } of parser as AsyncIterable<Numbered>) {
      const start = last + 1;
      last = line;
      if (!index) {
        index = headerIndex(record, wanted, columns as CsvColumns<R | O, R | O>);
        continue;
      }
      if (isBlank(record)) {
        blankFrom ||= start;
        continue;
      }
      for (; blankFrom > 0 && blankFrom < start; blankFrom++)
        yield { line: blankFrom, cells: cellsOf([], index), bytes, problem: ROW_REASONS.empty };
      blankFrom = 0;
      const row: CsvRow<R | O> = { line: start, cells: cellsOf(record, index), bytes };
      if (line > start) row.problem = ROW_REASONS.multiline(start, line);
      yield row;
    }
  } catch (error) {
    // Every line belongs to a record (blank ones too), so an unreadable row starts after the last one parsed.
    throw syntaxError(error, parser.lastLine + 1);
  } finally {
    input.destroy();
  }
  if (!index)
    throw new CsvError('CSV_EMPTY', 1, `the file is empty; line 1 must be the header naming ${quoted(columns.required)}`);
}
