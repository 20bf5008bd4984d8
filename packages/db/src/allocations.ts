import type { RejectionCode } from '@quest/domain';
import type { Sql } from './client.ts';
import { payoutView } from './ledger.ts';

/**
 * The lifecycle of requests and batches, end to end: accept (the 202 marker; a batch row with its
 * items), fail, find what is stranded for re-drive, and status. Deciding and applying is the
 * ledger's (ledger.ts); this module owns every other write to these rows.
 */

export type AllocationStatus =
  | {
      status: 'completed';
      payout: { id: string; amount: number; created_at: string; account: { pass: string } };
      updatedAt: Date;
    }
  | { status: 'rejected'; code: RejectionCode; updatedAt: Date }
  | { status: 'pending'; updatedAt: Date }
  | { status: 'failed'; code: string; updatedAt: Date };

/** A batch item's allocation id: `<batch id>:<item index>`. */
const BATCH_ITEM_KEY = /^(bat_[A-Za-z0-9_-]+):(0|[1-9][0-9]{0,8})$/;

/**
 * The outcome of one request key, newest truth first: a payout or a rejection is final; otherwise
 * the 202 marker says pending (or failed, if the worker gave up). Undefined when unknown. A batch
 * item (`<batch id>:<index>`) answers from its batch's payouts and rejections, completed or not.
 */
export async function getAllocationStatus(sql: Sql, questId: number, key: string): Promise<AllocationStatus | undefined> {
  const item = BATCH_ITEM_KEY.exec(key);
  const [paid] = item
    ? await sql<{ id: string; amount: number; created_at: Date; pass_address: string }[]>`
        select p.id, p.amount, p.created_at, a.pass_address
        from payouts p join accounts a on a.id = p.account_id
        where p.batch_id = ${item[1]!} and p.item_index = ${Number(item[2])} and p.quest_id = ${questId}`
    : await sql<{ id: string; amount: number; created_at: Date; pass_address: string }[]>`
        select p.id, p.amount, p.created_at, a.pass_address
        from payouts p join accounts a on a.id = p.account_id
        where p.quest_id = ${questId} and p.request_key = ${key} and p.batch_id is null`;
  if (paid) return { ...(payoutView(paid) as { status: 'completed'; payout: PayoutOut }), updatedAt: paid.created_at };
  const [rejected] = await sql<{ error_code: RejectionCode; created_at: Date }[]>`
    select error_code, created_at from allocation_rejections where quest_id = ${questId} and request_key = ${key}`;
  if (rejected) return { status: 'rejected', code: rejected.error_code, updatedAt: rejected.created_at };
  const [marker] = await sql<{ status: 'pending' | 'failed'; error_code: string | null; updated_at: Date }[]>`
    select status, error_code, updated_at from allocation_requests where quest_id = ${questId} and request_key = ${key}`;
  if (!marker) return undefined;
  return marker.status === 'failed'
    ? { status: 'failed', code: marker.error_code ?? 'ALLOCATION_FAILED', updatedAt: marker.updated_at }
    : { status: 'pending', updatedAt: marker.updated_at };
}

type PayoutOut = { id: string; amount: number; created_at: string; account: { pass: string } };

export interface RequestMark {
  questId: number;
  key: string;
  address: string;
  points: number;
  /** When the item was enqueued (ms since epoch): orders the marker's writers (see migration 00006). */
  enqueuedAt: number;
  jobId?: string | undefined;
}

/**
 * Write markers: pending (the API, before answering 202) or failed (the worker, when it gives an
 * item up). Whichever lands first, the marker ends up saying what the latest enqueue's fate is; a
 * request that already has an outcome never gets a marker that could contradict it.
 */
async function writeMarkers(sql: Sql, status: 'pending' | 'failed', marks: readonly RequestMark[]) {
  if (marks.length === 0) return;
  await sql`
    insert into allocation_requests as r (quest_id, request_key, address, points, status, error_code, enqueued_at, job_id)
    select v.quest_id, v.request_key, v.address, v.points, ${status}, ${status === 'failed' ? 'ALLOCATION_FAILED' : null},
           to_timestamp(v.enqueued_ms / 1000.0), v.job_id
    from unnest(${marks.map((m) => m.questId)}::int[], ${marks.map((m) => m.key)}::text[], ${marks.map((m) => m.address)}::text[],
                ${marks.map((m) => m.points)}::bigint[], ${marks.map((m) => m.enqueuedAt)}::bigint[], ${marks.map((m) => m.jobId ?? null)}::text[])
         as v(quest_id, request_key, address, points, enqueued_ms, job_id)
    where not exists (select 1 from payouts p where p.quest_id = v.quest_id and p.request_key = v.request_key and p.batch_id is null)
      and not exists (select 1 from allocation_rejections j where j.quest_id = v.quest_id and j.request_key = v.request_key)
    on conflict (quest_id, request_key) do update set
      status = excluded.status, error_code = excluded.error_code, enqueued_at = excluded.enqueued_at,
      job_id = coalesce(excluded.job_id, r.job_id), updated_at = now()
    where excluded.enqueued_at > r.enqueued_at or (excluded.enqueued_at = r.enqueued_at and excluded.status = 'failed')`;
}

/** Remember a request answered 202, so its status can be reported (and re-driven) before its decision lands. */
export function recordPendingAllocation(sql: Sql, mark: RequestMark): Promise<void> {
  return writeMarkers(sql, 'pending', [mark]);
}

/** The worker gave these items up: nothing was applied; a retry with the same key is safe. */
export function markAllocationsFailed(sql: Sql, marks: readonly RequestMark[]): Promise<void> {
  return writeMarkers(sql, 'failed', marks);
}

export interface StrandedRequest {
  quest_id: number;
  request_key: string;
  address: string;
  points: number;
  job_id: string | null;
  redrives: number;
}

/** Requests answered 202, still undecided, untouched for `olderThanMs`: candidates for a re-drive. */
export function findStrandedRequests(sql: Sql, opts: { olderThanMs: number; limit: number }): Promise<StrandedRequest[]> {
  return sql<StrandedRequest[]>`
    select r.quest_id, r.request_key, r.address, r.points, r.job_id, r.redrives
    from allocation_requests r
    where r.status = 'pending' and r.updated_at < now() - ${opts.olderThanMs} * interval '1 millisecond'
      and not exists (select 1 from payouts p where p.quest_id = r.quest_id and p.request_key = r.request_key and p.batch_id is null)
      and not exists (select 1 from allocation_rejections j where j.quest_id = r.quest_id and j.request_key = r.request_key)
    order by r.updated_at
    limit ${opts.limit}`;
}

/** A stranded request was found alive (its job is still queued) or re-driven: start its clock again. */
export async function touchRequest(sql: Sql, r: { questId: number; key: string; jobId?: string; redriven: boolean }) {
  await sql`
    update allocation_requests set updated_at = now(), job_id = coalesce(${r.jobId ?? null}, job_id),
      redrives = redrives + ${r.redriven ? 1 : 0}
    where quest_id = ${r.questId} and request_key = ${r.key} and status = 'pending'`;
}

export interface BatchRow {
  id: string;
  quest_id: number;
  owner_id: string;
  items_digest: string;
  status: 'pending' | 'processing' | 'completed' | 'failed';
  total: number;
  processed: number;
  succeeded: number;
  failed: number;
  error_code: string | null;
  created_at: Date;
  updated_at: Date;
  completed_at: Date | null;
}

/** Insert a batch, or return the existing one with the same id (an idempotent retry). */
export async function createOrGetBatch(
  sql: Sql,
  batch: {
    id: string;
    questId: number;
    ownerId: string;
    digest: string;
    addresses: readonly string[];
    points: readonly number[];
  },
): Promise<{ row: BatchRow; created: boolean }> {
  const [inserted] = await sql<BatchRow[]>`
    insert into batches (id, quest_id, owner_id, items_digest, total, addresses, points)
    values (${batch.id}, ${batch.questId}, ${batch.ownerId}, ${batch.digest}, ${batch.addresses.length},
            ${batch.addresses as string[]}::text[], ${batch.points as number[]}::bigint[])
    on conflict (id) do nothing
    returning ${sql(BATCH_COLUMNS)}`;
  if (inserted) return { row: inserted, created: true };
  const row = await getBatch(sql, batch.questId, batch.id);
  if (!row) throw new Error(`batch ${batch.id} exists for another quest`);
  return { row, created: false };
}

const BATCH_COLUMNS = [
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

export async function getBatch(sql: Sql, questId: number, batchId: string): Promise<BatchRow | undefined> {
  const [row] = await sql<BatchRow[]>`select ${sql(BATCH_COLUMNS)} from batches where id = ${batchId} and quest_id = ${questId}`;
  return row;
}

/** Batch progress, by id alone (the worker's view). */
export async function getBatchProgress(sql: Sql, batchId: string): Promise<BatchRow | undefined> {
  const [row] = await sql<BatchRow[]>`select ${sql(BATCH_COLUMNS)} from batches where id = ${batchId}`;
  return row;
}

/** A worker starts (or resumes) a batch: processing, unless it is already completed. */
export async function startBatch(sql: Sql, batchId: string): Promise<void> {
  await sql`update batches set status = 'processing', error_code = null, updated_at = now() where id = ${batchId} and status <> 'completed'`;
}

/** A worker gives a batch up: failed, resumable from its last committed chunk with the same Idempotency-Key. */
export async function failBatch(sql: Sql, batchId: string): Promise<void> {
  await sql`update batches set status = 'failed', error_code = 'ALLOCATION_FAILED', updated_at = now() where id = ${batchId} and status <> 'completed'`;
}

/** Items [start, end) of a batch, as stored at acceptance. */
export async function getBatchItems(
  sql: Sql,
  batchId: string,
  start: number,
  end: number,
): Promise<{ addresses: string[]; points: number[] } | undefined> {
  const [row] = await sql<{ addresses: string[] | null; points: string[] | number[] | null }[]>`
    select addresses[${start + 1}:${end}] as addresses, points[${start + 1}:${end}] as points from batches where id = ${batchId}`;
  if (!row?.addresses || !row.points) return undefined;
  return { addresses: row.addresses, points: row.points.map(Number) };
}

export interface StrandedBatch {
  id: string;
  quest_id: number;
  redrives: number;
}

/** Batches accepted but unfinished and untouched for `olderThanMs`: candidates for a re-drive. */
export function findStrandedBatches(sql: Sql, opts: { olderThanMs: number; limit: number }): Promise<StrandedBatch[]> {
  return sql<StrandedBatch[]>`
    select id, quest_id, redrives from batches
    where status in ('pending', 'processing') and addresses is not null
      and updated_at < now() - ${opts.olderThanMs} * interval '1 millisecond'
    order by updated_at limit ${opts.limit}`;
}

/** A stranded batch was found alive or re-driven: start its clock again. */
export async function touchBatch(sql: Sql, batchId: string, redriven: boolean): Promise<void> {
  await sql`update batches set updated_at = now(), redrives = redrives + ${redriven ? 1 : 0}
            where id = ${batchId} and status in ('pending', 'processing')`;
}

export type BatchItemResult =
  | { index: number; status: 'completed'; payout: { id: string; amount: number; created_at: string; account: { pass: string } } }
  | { index: number; status: 'rejected'; address: string; points: number; code: string };

/**
 * A window of a batch's per-item results, in item order: `limit` results from item `offset` on.
 * Every decided item has exactly one outcome row (a payout or a rejection), and items are decided
 * in index order, so the decided indexes are 0..processed-1 without a gap and "skip `offset`
 * results" is "start at index `offset`". Each side is read from its (batch_id, item_index) index
 * from there, at most `limit` rows: a page costs its own size, not the batch's (an OFFSET over the
 * union read, joined and sorted the whole batch for every page).
 */
export async function getBatchResults(sql: Sql, batchId: string, limit: number, offset: number): Promise<BatchItemResult[]> {
  const rows = await sql<
    {
      item_index: number;
      kind: 'p' | 'r';
      id: string | null;
      amount: number;
      created_at: Date;
      address: string;
      code: string | null;
    }[]
  >`
    select * from (
      (select p.item_index, 'p' as kind, p.id, p.amount, p.created_at, a.pass_address as address, null as code
       from payouts p join accounts a on a.id = p.account_id
       where p.batch_id = ${batchId} and p.item_index >= ${offset} order by p.item_index limit ${limit})
      union all
      (select r.item_index, 'r', null, r.points, r.created_at, r.address, r.error_code
       from allocation_rejections r
       where r.batch_id = ${batchId} and r.item_index >= ${offset} order by r.item_index limit ${limit})
    ) x order by item_index limit ${limit}`;
  return rows.map((r) =>
    r.kind === 'p'
      ? {
          index: r.item_index,
          status: 'completed',
          payout: { id: r.id!, amount: r.amount, created_at: r.created_at.toISOString(), account: { pass: r.address } },
        }
      : { index: r.item_index, status: 'rejected', address: r.address, points: r.amount, code: r.code! },
  );
}
