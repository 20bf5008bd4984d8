import type { Sql } from './client.ts';

/**
 * This process's PostgreSQL sessions by state (`active`, `idle`, `idle in transaction`, …), counted
 * on the server: postgres.js keeps its pool's state private. The process's sessions are those with
 * its application_name, so that name must be unique per process (the API and worker add host and
 * pid / worker id). The query's own session counts as `active`.
 */
export async function sessionsByState(sql: Sql): Promise<Record<string, number>> {
  const rows = await sql<{ state: string; n: number }[]>`
    select coalesce(state, 'unknown') as state, count(*)::int as n
      from pg_stat_activity
     where application_name = current_setting('application_name')
     group by 1`;
  const out: Record<string, number> = { active: 0, idle: 0, 'idle in transaction': 0 };
  for (const r of rows) out[r.state] = r.n;
  return out;
}

export interface PendingWork {
  /** Requests answered 202 with no outcome yet, by age of their acceptance. */
  requests: { count: number; oldestEnqueuedAt: Date | null; olderThan1m: number; olderThan10m: number };
  /** Batches accepted and not finished (pending or processing). */
  batches: {
    count: number;
    oldestCreatedAt: Date | null;
    olderThan1m: number;
    olderThan10m: number;
    pending: number;
    processing: number;
  };
}

/** What PostgreSQL holds undecided (two index-backed scans of the unfinished rows only). */
export async function pendingWork(sql: Sql): Promise<PendingWork> {
  const [requests] = await sql<{ count: number; oldest: Date | null; m1: number; m10: number }[]>`
    select count(*)::int as count, min(r.enqueued_at) as oldest,
           count(*) filter (where r.enqueued_at < now() - interval '1 minute')::int as m1,
           count(*) filter (where r.enqueued_at < now() - interval '10 minutes')::int as m10
      from allocation_requests r
     where r.status = 'pending'
       and not exists (select 1 from payouts p where p.quest_id = r.quest_id and p.request_key = r.request_key and p.batch_id is null)
       and not exists (select 1 from allocation_rejections j where j.quest_id = r.quest_id and j.request_key = r.request_key)
       and not exists (select 1 from reversals x where x.id = r.request_key)
       and not exists (select 1 from reversal_rejections y where y.id = r.request_key)`;
  const [batches] = await sql<
    { count: number; oldest: Date | null; m1: number; m10: number; pending: number; processing: number }[]
  >`
    select count(*)::int as count, min(created_at) as oldest,
           count(*) filter (where created_at < now() - interval '1 minute')::int as m1,
           count(*) filter (where created_at < now() - interval '10 minutes')::int as m10,
           count(*) filter (where status = 'pending')::int as pending,
           count(*) filter (where status = 'processing')::int as processing
      from batches where status in ('pending', 'processing')`;
  return {
    requests: {
      count: requests!.count,
      oldestEnqueuedAt: requests!.oldest,
      olderThan1m: requests!.m1,
      olderThan10m: requests!.m10,
    },
    batches: {
      count: batches!.count,
      oldestCreatedAt: batches!.oldest,
      olderThan1m: batches!.m1,
      olderThan10m: batches!.m10,
      pending: batches!.pending,
      processing: batches!.processing,
    },
  };
}

/** A worker's PostgreSQL application_name (at most 63 bytes, as the server keeps it). */
export const workerApplicationName = (workerId: string) => Buffer.from(`quest-worker ${workerId}`).subarray(0, 63).toString();

/**
 * End the open transactions of workers that are no longer pool members (`pg_terminate_backend`):
 * a worker that left the pool, fenced itself, or lost its network mid-transaction still holds its
 * quest's row lock, and the partition's next owner would wait for it until the server's
 * idle-in-transaction timeout. Only sessions inside a transaction for over `minAgeMs` are ended
 * (a worker that is just starting is never hit); a ledger transaction is atomic, so an ended one
 * left nothing behind and its worker (if it lives) retries. Returns the ended sessions' names.
 */
export async function endDepartedWorkerTransactions(
  sql: Sql,
  liveWorkerIds: readonly string[],
  minAgeMs = 1000,
): Promise<string[]> {
  const live = liveWorkerIds.map(workerApplicationName);
  const rows = await sql<{ name: string; ended: boolean }[]>`
    select application_name as name, pg_terminate_backend(pid) as ended
      from pg_stat_activity
     where datname = current_database()
       and pid <> pg_backend_pid()
       and application_name like 'quest-worker %'
       and application_name <> all(${live}::text[])
       and xact_start < now() - make_interval(secs => ${minAgeMs / 1000})`;
  return rows.filter((r) => r.ended).map((r) => r.name);
}
