import postgres from 'postgres';

export type Sql = postgres.Sql<Record<string, never>>;
export type TransactionSql = postgres.TransactionSql<Record<string, never>>;

export interface SqlOptions {
  max?: number;
  applicationName?: string;
  /** Seconds an idle connection is kept. */
  idleTimeout?: number;
  connectTimeout?: number;
}

/**
 * One postgres.js pool. int8 columns are parsed to JS numbers: every amount is bounded by a CHECK
 * to ≤ 2^53-1, so the conversion is exact. Notices are not logged (migrations emit some).
 */
export function createSql(url: string, opts: SqlOptions = {}): Sql {
  return postgres(url, {
    max: opts.max ?? 10,
    idle_timeout: opts.idleTimeout ?? 30,
    connect_timeout: opts.connectTimeout ?? 5,
    onnotice: () => {},
    connection: { application_name: opts.applicationName ?? 'quest-rewards' },
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
const TRANSIENT_SQLSTATE = /^(08|40001|40P01|53|57P0[1-3])/;
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
]);

export type DbErrorKind = 'transient' | 'permanent';

export function classifyDbError(error: unknown): DbErrorKind {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return 'permanent';
  if (TRANSIENT_CLIENT_CODES.has(code)) return 'transient';
  return TRANSIENT_SQLSTATE.test(code) ? 'transient' : 'permanent';
}

/**
 * A transaction in two round trips instead of postgres.js's four (`sql.begin` awaits BEGIN and
 * COMMIT on their own): BEGIN is pipelined with the first statements `fn` sends, and `commit`
 * pipelines COMMIT behind the last ones. If any statement fails, PostgreSQL has aborted the
 * transaction and answers the pipelined COMMIT with a rollback, so nothing is applied; the first
 * failure is thrown. A guard that must stop the commit has to fail in SQL, not in JavaScript after
 * its statement returns (by then COMMIT is on the wire). Written by hand because postgres.js offers
 * no pipelined BEGIN/COMMIT; on this machine a round trip between processes costs 0.1–0.2 ms of
 * CPU on each side, which was the largest share of the worker's time.
 */
export async function pipelinedTransaction<T>(
  sql: Sql,
  fn: (tx: Sql, commit: (statements: readonly Promise<unknown>[]) => Promise<void>) => Promise<T>,
): Promise<T> {
  const tx = await sql.reserve();
  let open = true;
  const begin = tx`begin`;
  begin.catch(() => {}); // reported by commit(), or by the first statement awaited after it
  try {
    return await fn(tx as unknown as Sql, async (statements) => {
      const settled = await Promise.allSettled([begin, ...statements, tx`commit`]);
      open = false; // committed, or rolled back by the server after a failed statement
      const failures = settled.filter((s): s is PromiseRejectedResult => s.status === 'rejected').map((s) => s.reason);
      // Report the cause, not the statements that failed after it because the transaction was
      // aborted (25P02); postgres.js sends a query when it is first awaited, so array order need
      // not be execution order.
      if (failures.length) throw failures.find((e) => (e as { code?: string })?.code !== '25P02') ?? failures[0];
    });
  } catch (error) {
    if (open) await tx`rollback`.catch(() => {});
    throw error;
  } finally {
    tx.release();
  }
}
