import type { Sql } from '@quest/db';

/**
 * How a table was read and written, from `pg_stat_user_tables`: the plan tests measure a statement
 * by the rows its scans read, not by its time. The counters reach the view when the backend that
 * ran the statements flushes them: call `flushTableStats` on that connection first, then poll.
 */
export interface TableStats {
  /** Scans of the table, sequential and by index. */
  scans: number;
  /** Rows read by sequential scans. */
  seqRows: number;
  /** Rows updated. */
  updates: number;
}

export async function tableStats(sql: Sql, table: string): Promise<TableStats> {
  const [row] = await sql<TableStats[]>`
    select (coalesce(seq_scan, 0) + coalesce(idx_scan, 0))::int as scans, coalesce(seq_tup_read, 0)::int as "seqRows",
           n_tup_upd::int as updates
    from pg_stat_user_tables where relname = ${table}`;
  return row!;
}

/**
 * Ask this connection's backend to flush its statistics as soon as it next goes idle (PostgreSQL
 * 15+); otherwise they arrive within ~10 s of idling (older servers sent them to the statistics
 * collector within half a second and have no such function).
 */
export async function flushTableStats(sql: Sql): Promise<void> {
  await sql`do $$ begin perform pg_stat_force_next_flush(); exception when undefined_function then null; end $$`;
}
