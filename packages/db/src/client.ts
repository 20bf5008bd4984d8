import postgres from 'postgres';

export type Sql = postgres.Sql<Record<string, never>>;
export type TransactionSql = postgres.TransactionSql<Record<string, never>>;

export interface SqlOptions {
  max?: number;
  applicationName?: string;
  /** Seconds an idle connection is kept. */
  idleTimeout?: number;
  connectTimeout?: number;
  /**
   * Server-side limits for every session of the pool (milliseconds; 0 = PostgreSQL's default, none).
   * A worker frozen or cut off mid-transaction must not hold a quest's row lock for long: the server
   * ends a session idle inside a transaction, and a statement waiting for a lock gives up (55P03,
   * retried as transient).
   */
  idleInTransactionTimeoutMs?: number;
  lockTimeoutMs?: number;
  statementTimeoutMs?: number;
}

/**
 * Pause before a connection tries again after a failed attempt, in seconds, by the pool's count of
 * failures in a row: 50 ms doubling to 1 s. postgres.js's own grows to 20 s, so after a long outage
 * (a failover manager takes 10–30 s to promote) the pool would find the new primary up to 20 s late.
 */
export const reconnectBackoff = (failures: number): number => Math.min(0.05 * 2 ** Math.min(failures, 10), 1);

/**
 * One postgres.js pool. int8 columns are parsed to JS numbers: every amount is bounded by a CHECK
 * to ≤ 2^53-1, so the conversion is exact. Notices are not logged (migrations emit some).
 *
 * `url` may list several hosts with `target_session_attrs=read-write` (docs/high-availability.md):
 * each connection tries the hosts in turn from the one after its last, and keeps only the primary
 * (patches/postgres+3.4.9.patch makes postgres.js refuse a hot standby there and give up after one
 * round). The session settings below are start-up parameters, so every reconnection, to whichever
 * host is the primary then, carries them again.
 */
export function createSql(url: string, opts: SqlOptions = {}): Sql {
  return postgres(url, {
    max: opts.max ?? 10,
    idle_timeout: opts.idleTimeout ?? 30,
    connect_timeout: opts.connectTimeout ?? 5,
    backoff: reconnectBackoff,
    onnotice: () => {},
    connection: {
      application_name: opts.applicationName ?? 'quest-rewards',
      ...(opts.idleInTransactionTimeoutMs ? { idle_in_transaction_session_timeout: opts.idleInTransactionTimeoutMs } : {}),
      ...(opts.lockTimeoutMs ? { lock_timeout: opts.lockTimeoutMs } : {}),
      ...(opts.statementTimeoutMs ? { statement_timeout: opts.statementTimeoutMs } : {}),
    },
    types: {
      int8: {
        to: 20,
        from: [20],
        serialize: (x: number | bigint) => String(x),
        parse: (x: string) => Number(x),
      },
    },
  }) as unknown as Sql;
}

/** postgres.js error codes / SQLSTATEs that mean "try again", not "this request is wrong". */
// 25006 (read-only transaction): a session on a server that is, or has just become, a standby.
const TRANSIENT_SQLSTATE = /^(08|40001|40P01|53|55P03|57014|57P0[1-5]|25P03|25006)/;
/** Configuration errors: retrying cannot help (missing database, authentication, missing table). */
const CONFIGURATION_SQLSTATE = /^(3D000|28000|28P01|42P01|3F000)$/;
const TRANSIENT_CLIENT_CODES = new Set([
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'CONNECT_TIMEOUT',
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EAI_AGAIN',
  // No host of a multi-host URL is the primary now (a failover in progress): patches/postgres+3.4.9.patch.
  'TARGET_SESSION_ATTRS',
]);

/**
 * - transient: try again (connection loss, restart, timeouts, serialization failure, lock timeout);
 * - conflict: a unique key already holds this request's outcome (another worker committed it):
 *   try again, reading stored outcomes first, and the original outcome is replayed;
 * - configuration: the process is pointed at the wrong database or schema;
 * - permanent: this statement can never succeed as it is.
 */
export type DbErrorKind = 'transient' | 'conflict' | 'configuration' | 'permanent';

/** Thrown when a database attempt did not settle within its time limit. */
export class DbAttemptTimeout extends Error {
  override readonly name = 'DbAttemptTimeout';
  readonly code = 'ATTEMPT_TIMEOUT';
}

export function classifyDbError(error: unknown): DbErrorKind {
  if (error instanceof DbAttemptTimeout) return 'transient';
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return 'permanent';
  if (TRANSIENT_CLIENT_CODES.has(code)) return 'transient';
  if (code === '23505') return 'conflict';
  if (CONFIGURATION_SQLSTATE.test(code)) return 'configuration';
  return TRANSIENT_SQLSTATE.test(code) ? 'transient' : 'permanent';
}

/** The connection itself is gone (not a statement error): nothing more may be sent on it. */
function isConnectionLoss(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && TRANSIENT_CLIENT_CODES.has(code);
}

/**
 * Settle `promise` within `ms`, or reject with DbAttemptTimeout. The attempt itself is abandoned,
 * not cancelled: callers must be safe to retry (every ledger write is guarded by unique keys).
 */
export function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  if (!(ms > 0)) return promise;
  let timer: NodeJS.Timeout;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new DbAttemptTimeout(`database attempt did not settle within ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

/**
 * A transaction in two round trips instead of postgres.js's four (`sql.begin` awaits BEGIN and
 * COMMIT on their own): BEGIN is pipelined with the first statements `fn` sends, and `commit`
 * pipelines COMMIT behind the last ones. If any statement fails, PostgreSQL has aborted the
 * transaction and answers the pipelined COMMIT with a rollback, so nothing is applied; the first
 * failure is thrown. A guard that must stop the commit has to fail in SQL, not in JavaScript after
 * its statement returns (by then COMMIT is on the wire). Written by hand because postgres.js offers
 * no pipelined BEGIN/COMMIT, and a round trip costs CPU on both sides (docs/performance.md).
 */
export async function pipelinedTransaction<T>(
  sql: Sql,
  fn: (tx: Sql, commit: (statements: readonly Promise<unknown>[]) => Promise<void>) => Promise<T>,
  /**
   * Once aborted, commit() sends nothing and throws `signal.reason` (the transaction rolls back):
   * writes planned by an attempt whose job was abandoned meanwhile never reach the server.
   */
  signal?: AbortSignal,
): Promise<T> {
  const tx = await sql.reserve();
  let open = true;
  let lost = false;
  const begin = tx`begin`;
  begin.catch(() => {}); // reported by commit(), or by the first statement awaited after it
  try {
    return await fn(tx as unknown as Sql, async (statements) => {
      // postgres.js sends a query when it is first awaited: nothing below is sent yet.
      if (signal?.aborted) throw signal.reason;
      const all = [begin, ...statements, tx`commit`];
      // A lost connection settles the statements already sent, but postgres.js keeps the rest of a
      // reserved connection's queue waiting forever: stop at the first connection loss.
      const connectionLost = new Promise<never>((_, reject) => {
        for (const p of all) p.catch((e: unknown) => isConnectionLoss(e) && reject(e));
      });
      const settled = await Promise.race([Promise.allSettled(all), connectionLost]);
      open = false; // committed, or rolled back by the server after a failed statement
      const failures = settled.filter((s): s is PromiseRejectedResult => s.status === 'rejected').map((s) => s.reason);
      if (failures.some(isConnectionLoss)) lost = true;
      // Report the cause, not the statements that failed after it because the transaction was
      // aborted (25P02); postgres.js sends a query when it is first awaited, so array order need
      // not be execution order.
      if (failures.length) throw failures.find((e) => (e as { code?: string })?.code !== '25P02') ?? failures[0];
    });
  } catch (error) {
    // A connection that is gone takes its transaction with it: there is nothing to roll back (any
    // query on it fails with CONNECTION_CLOSED, and crashes the process without our patch of
    // porsager/postgres#1208, patches/postgres+3.4.9.patch). Releasing it would put the dead
    // connection back into the pool as open, where postgres.js (3.4.9) fails every query routed to
    // it and never reconnects it; left alone, the pool reconnects it when needed.
    if (isConnectionLoss(error)) lost = true;
    if (open && !lost) await tx`rollback`.catch(() => {});
    throw error;
  } finally {
    if (!lost) tx.release();
  }
}

/**
 * Settings, for the rest of the transaction, of statements that touch a few rows by key in tables
 * that grow fast — the outbox and the delivery log: plain index scans only (no sequential or
 * bitmap scans), planned for the statement's own parameters each time. Such a table's statistics
 * trail its size (autovacuum analyzes it a minute or more later), and postgres.js prepares every
 * statement, which PostgreSQL switches to a generic plan after five runs, costed on the table as it
 * was then: a plan made while the table was nearly empty reads all of it for every few rows
 * wanted. Plain index scans also mark the entries of rows they find dead, which bitmap scans never
 * do, so a scan of a partial index (unpublished events) does not re-read the rows that left it
 * since the last vacuum. docs/performance.md has the measurements.
 */
export const keyedSettings = (tx: Sql) =>
  tx`select set_config('enable_seqscan', 'off', true), set_config('enable_bitmapscan', 'off', true),
      set_config('plan_cache_mode', 'force_custom_plan', true)`;

/**
 * One statement under keyedSettings, in a pipelined transaction: one round trip. `statement` must
 * return its query as postgres.js builds it, unsent (a query is sent when first awaited), so the
 * settings go out before it — hence a PendingQuery, not any promise. Called with the pool, not
 * inside a transaction (it reserves a connection of its own).
 */
export function keyedStatement<T extends readonly postgres.MaybeRow[]>(
  sql: Sql,
  statement: (tx: Sql) => postgres.PendingQuery<T>,
): Promise<postgres.RowList<T>> {
  return pipelinedTransaction(sql, async (tx, commit) => {
    const settings = keyedSettings(tx);
    const result = statement(tx);
    await commit([settings, result]);
    return result;
  });
}
