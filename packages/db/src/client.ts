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
