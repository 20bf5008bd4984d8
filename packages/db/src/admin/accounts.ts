import { toChecksumAddress } from '@quest/domain';
import type { Sql } from '../client.ts';
import { AdminError, type PassAddress } from './errors.ts';
import { checkLimit, type ListOptions, type ListPage, page } from './lists.ts';
import { requirePassAddress } from './pass.ts';

/** Accounts: created one at a time or imported in bulk by the operator, and listed. */

export interface AccountRecord {
  id: number;
  pass: PassAddress;
  balance: number;
  createdAt: Date;
}

interface AccountRow {
  id: number;
  pass_address: PassAddress;
  balance: number;
  created_at: Date;
}
const toAccount = (r: AccountRow): AccountRecord => ({
  id: r.id,
  pass: r.pass_address,
  balance: r.balance,
  createdAt: r.created_at,
});

export async function createAccount(sql: Sql, input: { pass: string }): Promise<AccountRecord> {
  const pass = requirePassAddress(input.pass);
  const [row] = await sql<AccountRow[]>`
    insert into accounts (pass_address) values (${pass}) on conflict (pass_address) do nothing
    returning id, pass_address, balance, created_at`;
  if (!row) throw new AdminError('ALREADY_EXISTS', `an account with pass address ${pass} already exists`);
  return toAccount(row);
}

export interface ImportRow {
  /** Where the value came from (a CSV line number), for the invalid-row report. */
  line: number;
  value: string;
}

export interface ImportProgress {
  processed: number;
  created: number;
  skipped: number;
  invalid: number;
}

export interface ImportResult extends ImportProgress {
  /** The first `maxInvalidRows` invalid rows; `invalid` counts them all. */
  invalidRows: ImportRow[];
}

export interface ImportOptions {
  /** Addresses per INSERT statement. */
  chunkSize?: number;
  maxInvalidRows?: number;
  /** Called after every chunk is written. */
  onProgress?: (progress: ImportProgress) => void;
}

/**
 * Create accounts in bulk from a stream of addresses, skipping existing ones (and repeats within
 * the input). Each chunk is one set-based statement in its own transaction, so an interrupted
 * import can simply be run again. While one chunk is being written the next one is being read.
 */
export async function importAccounts(
  sql: Sql,
  rows: Iterable<ImportRow | string> | AsyncIterable<ImportRow | string>,
  opts: ImportOptions = {},
): Promise<ImportResult> {
  const chunkSize = opts.chunkSize ?? 10_000;
  const maxInvalidRows = opts.maxInvalidRows ?? 100;
  const result: ImportResult = { processed: 0, created: 0, skipped: 0, invalid: 0, invalidRows: [] };

  let inflight: Promise<void> = Promise.resolve();
  let failure: { error: unknown } | undefined;
  const write = (addresses: string[]) => {
    const previous = inflight;
    inflight = (async () => {
      await previous;
      if (failure) return;
      // One text[] literal, written out here rather than with sql.array(): postgres.js types an
      // array parameter only once its pool has fetched the array types, which a fresh pool has
      // not. The elements are checksummed addresses ([0-9A-Za-z] only), so they need no quoting.
      const [row] = await sql<{ created: number }[]>`
        with inserted as (
          insert into accounts (pass_address)
          select * from unnest(${`{${addresses.join(',')}}`}::text[])
          on conflict (pass_address) do nothing
          returning 1
        )
        select count(*)::int as created from inserted`;
      result.created += row!.created;
      result.skipped += addresses.length - row!.created;
      result.processed += addresses.length;
      opts.onProgress?.({
        processed: result.processed,
        created: result.created,
        skipped: result.skipped,
        invalid: result.invalid,
      });
    })().catch((error: unknown) => {
      failure ??= { error };
    });
  };

  let chunk: string[] = [];
  let index = 0;
  for await (const item of rows) {
    index += 1;
    const row = typeof item === 'string' ? { line: index, value: item } : item;
    const pass = toChecksumAddress(row.value.trim());
    if (!pass) {
      result.invalid += 1;
      result.processed += 1;
      if (result.invalidRows.length < maxInvalidRows) result.invalidRows.push(row);
      continue;
    }
    chunk.push(pass);
    if (chunk.length >= chunkSize) {
      // Let at most one chunk wait behind the one being written: bounded memory, overlapped I/O.
      await inflight;
      if (failure) break;
      write(chunk);
      chunk = [];
    }
  }
  if (chunk.length && !failure) write(chunk);
  await inflight;
  if (failure) throw failure.error;
  return result;
}

export async function listAccounts(sql: Sql, opts: ListOptions<number>): Promise<ListPage<AccountRecord>> {
  checkLimit(opts.limit);
  const rows = await sql<AccountRow[]>`
    select id, pass_address, balance, created_at from accounts
    where ${opts.after === undefined ? sql`true` : sql`id > ${opts.after}`}
    order by id limit ${opts.limit + 1}`;
  return page(rows, opts.limit, toAccount);
}
