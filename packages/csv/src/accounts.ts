import type { Readable } from 'node:stream';
import { readCsv } from './read.ts';

/**
 * An accounts file: the reader's rules (read.ts) with one column of pass addresses, headed `pass`
 * (or `address`). Each row gives its file line and the cell; the importer checks the address.
 */
export const ACCOUNT_COLUMNS = { required: ['pass'], aliases: { pass: ['address'] } } as const;

export interface AccountCsvRow {
  line: number;
  /** The pass address as written; '' for a row the reader refuses (a blank line), which the importer counts invalid. */
  value: string;
  bytes: number;
}

/** Stream an accounts file's rows. Throws CsvError for a file that cannot be read. */
export async function* readAccountCsv(input: Readable): AsyncGenerator<AccountCsvRow> {
  for await (const { line, bytes, cells, problem } of readCsv(input, ACCOUNT_COLUMNS)) {
    yield { line, bytes, value: problem ? '' : cells.pass };
  }
}
