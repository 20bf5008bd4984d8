import { type PayoutView, payoutView, type RejectionCode, type ReversalView, reversalView } from '@quest/domain';
import type { Sql } from './client.ts';
import { BATCH_COLUMNS, type BatchRow } from './lifecycle.ts';

/**
 * Where requests and batches stand, read from PostgreSQL: what the status routes answer, what the
 * API answers when a decision's reply did not come, and what the reconciler re-drives. The writes
 * of the same rows are lifecycle.ts's.
 */

export type AllocationStatus =
  | { status: 'completed'; payout: PayoutView; updatedAt: Date }
  | { status: 'rejected'; code: RejectionCode; updatedAt: Date }
  | { status: 'pending'; updatedAt: Date }
  | { status: 'failed'; code: string; updatedAt: Date };

/** A batch item's allocation id: `<batch id>:<item index>`. */
const BATCH_ITEM_KEY = /^(bat_[A-Za-z0-9_-]+):(0|[1-9][0-9]{0,8})$/;

type PaidRow = { id: string; amount: number; created_at: Date; pass_address: string };

/**
 * The outcome of one request key, newest truth first: a payout or a rejection is final; otherwise
 * the 202 marker says pending (or failed, if the worker gave up). Undefined when unknown. A batch
 * item (`<batch id>:<index>`) answers from its batch's payouts and rejections, completed or not.
 */
export async function getAllocationStatus(sql: Sql, questId: number, key: string): Promise<AllocationStatus | undefined> {
  const item = BATCH_ITEM_KEY.exec(key);
  const [paid] = item
    ? await sql<PaidRow[]>`
        select p.id, p.amount, p.created_at, a.pass_address
        from payouts p join accounts a on a.id = p.account_id
        where p.batch_id = ${item[1]!} and p.item_index = ${Number(item[2])} and p.quest_id = ${questId}`
    : await sql<PaidRow[]>`
        select p.id, p.amount, p.created_at, a.pass_address
        from payouts p join accounts a on a.id = p.account_id
        where p.quest_id = ${questId} and p.request_key = ${key} and p.batch_id is null`;
  if (paid) {
    const payout = payoutView({ id: paid.id, amount: paid.amount, createdAt: paid.created_at, pass: paid.pass_address });
    return { status: 'completed', payout, updatedAt: paid.created_at };
  }
  const [rejected] = await sql<{ error_code: RejectionCode; created_at: Date }[]>`
    select error_code, created_at from allocation_rejections where quest_id = ${questId} and request_key = ${key}`;
  if (rejected) return { status: 'rejected', code: rejected.error_code, updatedAt: rejected.created_at };
  const [marker] = await sql<{ status: 'pending' | 'failed'; error_code: string | null; updated_at: Date }[]>`
    select status, error_code, updated_at from allocation_requests
    where quest_id = ${questId} and request_key = ${key} and kind = 'allocation'`;
  if (!marker) return undefined;
  return marker.status === 'failed'
    ? { status: 'failed', code: marker.error_code ?? 'ALLOCATION_FAILED', updatedAt: marker.updated_at }
    : { status: 'pending', updatedAt: marker.updated_at };
}

export type ReversalStatus =
  | { status: 'completed'; reversal: ReversalView; updatedAt: Date }
  | { status: 'rejected'; code: RejectionCode; payoutId: string; updatedAt: Date }
  | { status: 'pending'; payoutId: string; updatedAt: Date }
  | { status: 'failed'; payoutId: string; updatedAt: Date };

/**
 * The outcome of a reversal request (its id is its request key), newest truth first: the reversal
 * or its rejection is final; otherwise the 202 marker says pending (or failed). Undefined when
 * unknown in this quest.
 */
export async function getReversalStatus(sql: Sql, questId: number, id: string): Promise<ReversalStatus | undefined> {
  const [done] = await sql<
    { payout_id: string; amount: number; reason: string | null; created_at: Date; pass_address: string }[]
  >`
    select r.payout_id, r.amount, r.reason, r.created_at, a.pass_address
    from reversals r join accounts a on a.id = r.account_id
    where r.id = ${id} and r.quest_id = ${questId}`;
  if (done) {
    const reversal = reversalView({
      id,
      payoutId: done.payout_id,
      questId,
      amount: done.amount,
      reason: done.reason,
      createdAt: done.created_at,
      pass: done.pass_address,
    });
    return { status: 'completed', reversal, updatedAt: done.created_at };
  }
  const [rejected] = await sql<{ payout_id: string; error_code: RejectionCode; created_at: Date }[]>`
    select payout_id, error_code, created_at from reversal_rejections where id = ${id} and quest_id = ${questId}`;
  if (rejected) {
    return { status: 'rejected', code: rejected.error_code, payoutId: rejected.payout_id, updatedAt: rejected.created_at };
  }
  const [marker] = await sql<{ status: 'pending' | 'failed'; payout_id: string; updated_at: Date }[]>`
    select status, payout_id, updated_at from allocation_requests
    where quest_id = ${questId} and request_key = ${id} and kind = 'reversal'`;
  if (!marker) return undefined;
  return { status: marker.status, payoutId: marker.payout_id, updatedAt: marker.updated_at };
}

/** A request answered 202 and still undecided: an allocation (address, points) or a reversal (payout_id, points?, reason?). */
export interface StrandedRequest {
  quest_id: number;
  request_key: string;
  kind: 'allocation' | 'reversal';
  address: string | null;
  points: number | null;
  payout_id: string | null;
  reason: string | null;
  job_id: string | null;
  redrives: number;
}

/** Requests answered 202, still undecided, untouched for `olderThanMs`: candidates for a re-drive. */
export function findStrandedRequests(sql: Sql, opts: { olderThanMs: number; limit: number }): Promise<StrandedRequest[]> {
  return sql<StrandedRequest[]>`
    select r.quest_id, r.request_key, r.kind, r.address, r.points, r.payout_id, r.reason, r.job_id, r.redrives
    from allocation_requests r
    where r.status = 'pending' and r.updated_at < now() - ${opts.olderThanMs} * interval '1 millisecond'
      and not exists (select 1 from payouts p where p.quest_id = r.quest_id and p.request_key = r.request_key and p.batch_id is null)
      and not exists (select 1 from allocation_rejections j where j.quest_id = r.quest_id and j.request_key = r.request_key)
      and not exists (select 1 from reversals x where x.id = r.request_key)
      and not exists (select 1 from reversal_rejections y where y.id = r.request_key)
    order by r.updated_at
    limit ${opts.limit}`;
}

export async function getBatch(sql: Sql, questId: number, batchId: string): Promise<BatchRow | undefined> {
  const [row] = await sql<BatchRow[]>`select ${sql(BATCH_COLUMNS)} from batches where id = ${batchId} and quest_id = ${questId}`;
  return row;
}

/** Batch progress, by id alone (the worker's view). */
export async function getBatchProgress(sql: Sql, batchId: string): Promise<BatchRow | undefined> {
  const [row] = await sql<BatchRow[]>`select ${sql(BATCH_COLUMNS)} from batches where id = ${batchId}`;
  return row;
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

export type BatchItemResult =
  | { index: number; status: 'completed'; payout: PayoutView }
  | { index: number; status: 'rejected'; address: string; points: number; code: RejectionCode };

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
      code: RejectionCode | null;
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
          payout: payoutView({ id: r.id!, amount: r.amount, createdAt: r.created_at, pass: r.address }),
        }
      : { index: r.item_index, status: 'rejected', address: r.address, points: r.amount, code: r.code! },
  );
}
