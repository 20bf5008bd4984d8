import type { BatchProgress, BatchState } from '@quest/domain';
import type { Sql } from './client.ts';

/**
 * The lifecycle of requests and batches: the only module that writes their status
 * (`allocation_requests`, `batches`; test/writers.test.ts keeps it so). The ledger decides
 * items and writes their outcomes (payouts, rejections); a batch chunk's progress, including
 * `completed`, is written here too, by `advanceBatch`, which the ledger runs inside its own
 * transaction; its completion event is planned by the domain and written by outbox.ts, like every
 * event. Reads of the same rows are in status.ts.
 *
 * A request: accepted (no row) → `pending` when answered 202 (the API's marker) → decided (its
 * payout or rejection row is the truth; the marker is left behind) or `failed` (the worker gave it
 * up; a retry with the same key is safe). A batch: `pending` when accepted → `processing` when a
 * worker starts or resumes it → `completed` with its last chunk, or `failed` (resumable).
 */

/** A request's marker: an allocation's (address, points) or a reversal's (payout, points?, reason?). */
export type RequestMark = (
  | { kind?: 'allocation'; address: string; points: number }
  | { kind: 'reversal'; payoutId: string; points?: number | undefined; reason?: string | undefined }
) & {
  questId: number;
  key: string;
  /** When the item was enqueued (ms since epoch): orders the marker's writers (see migration 00006). */
  enqueuedAt: number;
  jobId?: string | undefined;
};

/**
 * Write markers: pending (the API, before answering 202) or failed (the worker, when it gives an
 * item up). Whichever lands first, the marker ends up saying what the latest enqueue's fate is; a
 * request that already has an outcome never gets a marker that could contradict it.
 */
async function writeMarkers(sql: Sql, status: 'pending' | 'failed', marks: readonly RequestMark[]) {
  if (marks.length === 0) return;
  const reversal = (m: RequestMark) => (m.kind === 'reversal' ? m : undefined);
  await sql`
    insert into allocation_requests as r
      (quest_id, request_key, kind, address, points, payout_id, reason, status, error_code, enqueued_at, job_id)
    select v.quest_id, v.request_key, v.kind, v.address, v.points, v.payout_id, v.reason, ${status},
           ${status === 'failed' ? 'ALLOCATION_FAILED' : null}, to_timestamp(v.enqueued_ms / 1000.0), v.job_id
    from unnest(${marks.map((m) => m.questId)}::int[], ${marks.map((m) => m.key)}::text[],
                ${marks.map((m) => m.kind ?? 'allocation')}::text[],
                ${marks.map((m) => (m.kind === 'reversal' ? null : m.address))}::text[], ${marks.map((m) => m.points ?? null)}::bigint[],
                ${marks.map((m) => reversal(m)?.payoutId ?? null)}::text[], ${marks.map((m) => reversal(m)?.reason ?? null)}::text[],
                ${marks.map((m) => m.enqueuedAt)}::bigint[], ${marks.map((m) => m.jobId ?? null)}::text[])
         as v(quest_id, request_key, kind, address, points, payout_id, reason, enqueued_ms, job_id)
    where not exists (select 1 from payouts p where p.quest_id = v.quest_id and p.request_key = v.request_key and p.batch_id is null)
      and not exists (select 1 from allocation_rejections j where j.quest_id = v.quest_id and j.request_key = v.request_key)
      and not exists (select 1 from reversals x where x.id = v.request_key)
      and not exists (select 1 from reversal_rejections y where y.id = v.request_key)
    on conflict (quest_id, request_key) do update set
      status = excluded.status, error_code = excluded.error_code, enqueued_at = excluded.enqueued_at,
      job_id = coalesce(excluded.job_id, r.job_id), updated_at = now()
    where excluded.enqueued_at > r.enqueued_at or (excluded.enqueued_at = r.enqueued_at and excluded.status = 'failed')`;
}

/**
 * Remember a request (an allocation or a reversal) answered 202, so its status can be reported (and
 * re-driven) before its decision lands.
 */
export function recordPendingRequest(sql: Sql, mark: RequestMark): Promise<void> {
  return writeMarkers(sql, 'pending', [mark]);
}

/** The worker gave these items (allocations or reversals) up: nothing was applied; a retry with the same key is safe. */
export function markAllocationsFailed(sql: Sql, marks: readonly RequestMark[]): Promise<void> {
  return writeMarkers(sql, 'failed', marks);
}

/** A stranded request was found alive (its job is still queued) or re-driven: start its clock again. */
export async function touchRequest(sql: Sql, r: { questId: number; key: string; jobId?: string; redriven: boolean }) {
  await sql`
    update allocation_requests set updated_at = now(), job_id = coalesce(${r.jobId ?? null}, job_id),
      redrives = redrives + ${r.redriven ? 1 : 0}
    where quest_id = ${r.questId} and request_key = ${r.key} and status = 'pending'`;
}

/** A batch's row: its progress (@quest/domain BatchState) and what identifies its items. */
export interface BatchRow extends BatchState {
  items_digest: string;
  error_code: string | null;
}

export const BATCH_COLUMNS = [
  'id',
  'quest_id',
  'owner_id',
  'items_digest',
  'status',
  'total',
  'processed',
  'succeeded',
  'failed',
  'error_code',
  'created_at',
  'updated_at',
  'completed_at',
] as const;

/** Insert a batch (pending, with its items), or return undefined when one with this id exists (an idempotent retry). */
export async function insertBatch(
  sql: Sql,
  batch: {
    id: string;
    questId: number;
    ownerId: string;
    digest: string;
    addresses: readonly string[];
    points: readonly number[];
  },
): Promise<BatchRow | undefined> {
  const [inserted] = await sql<BatchRow[]>`
    insert into batches (id, quest_id, owner_id, items_digest, total, addresses, points)
    values (${batch.id}, ${batch.questId}, ${batch.ownerId}, ${batch.digest}, ${batch.addresses.length},
            ${batch.addresses as string[]}::text[], ${batch.points as number[]}::bigint[])
    on conflict (id) do nothing
    returning ${sql(BATCH_COLUMNS)}`;
  return inserted;
}

/** A worker starts (or resumes) a batch: processing, unless it is already completed. */
export async function startBatch(sql: Sql, batchId: string): Promise<void> {
  await sql`update batches set status = 'processing', error_code = null, updated_at = now() where id = ${batchId} and status <> 'completed'`;
}

/** A worker gives a batch up: failed, resumable from its last committed chunk with the same Idempotency-Key. */
export async function failBatch(sql: Sql, batchId: string): Promise<void> {
  await sql`update batches set status = 'failed', error_code = 'ALLOCATION_FAILED', updated_at = now() where id = ${batchId} and status <> 'completed'`;
}

/** A stranded batch was found alive or re-driven: start its clock again. */
export async function touchBatch(sql: Sql, batchId: string, redriven: boolean): Promise<void> {
  await sql`update batches set updated_at = now(), redrives = redrives + ${redriven ? 1 : 0}
            where id = ${batchId} and status in ('pending', 'processing')`;
}

/** Thrown when a batch chunk finds the batch already advanced past its start (see advanceBatch). */
export class BatchProgressMoved extends Error {
  override readonly name = 'BatchProgressMoved';
}

/**
 * Write a batch's progress past a chunk that started at `start` — `after`, as the ledger computed it
 * (advanceBatchProgress in @quest/domain, which batch.completed carries too) — inside the ledger
 * transaction that applies the chunk (`tx`). Only from where the chunk started: if another copy of
 * the job got there first, the statement fails and takes the transaction with it
 * (BatchProgressMoved), so a chunk is never applied twice. Pipelined with COMMIT, so the guard fails
 * in SQL (division by zero when the batch has moved), not in JavaScript after its statement returns.
 */
export function advanceBatch(tx: Sql, start: number, after: BatchProgress): Promise<unknown> {
  return tx`
    with moved as (
      update batches set processed = ${after.processed}, succeeded = ${after.succeeded}, failed = ${after.failed},
        status = ${after.status}, completed_at = ${after.completed_at}, updated_at = ${after.updated_at}
      where id = ${after.id} and processed = ${start}
      returning 1
    )
    select 1 / count(*)::int as guard from moved`.catch((error: { code?: string }) => {
    throw error?.code === '22012' ? new BatchProgressMoved() : error;
  });
}
