import type { RejectionCode } from '@quest/domain';
import type { Sql } from './client.ts';
import { payoutView } from './ledger.ts';

/** Read-side of the allocation pipeline: request status, 202 markers, batches and their results. */

export type AllocationStatus =
  | { status: 'completed'; payout: { id: string; amount: number; created_at: string; account: { pass: string } } }
  | { status: 'rejected'; code: RejectionCode }
  | { status: 'pending' }
  | { status: 'failed'; code: string };

/**
 * The outcome of one request key, newest truth first: a payout or a rejection is final; otherwise
 * the 202 marker says pending (or failed, if the worker gave up). Undefined when unknown.
 */
export async function getAllocationStatus(sql: Sql, questId: number, key: string): Promise<AllocationStatus | undefined> {
  const [paid] = await sql<{ id: string; amount: number; created_at: Date; pass_address: string }[]>`
    select p.id, p.amount, p.created_at, a.pass_address
    from payouts p join accounts a on a.id = p.account_id
    where p.quest_id = ${questId} and p.request_key = ${key} and p.batch_id is null`;
  if (paid) return payoutView(paid) as AllocationStatus;
  const [rejected] = await sql<{ error_code: RejectionCode }[]>`
    select error_code from allocation_rejections where quest_id = ${questId} and request_key = ${key}`;
  if (rejected) return { status: 'rejected', code: rejected.error_code };
  const [marker] = await sql<{ status: 'pending' | 'failed'; error_code: string | null }[]>`
    select status, error_code from allocation_requests where quest_id = ${questId} and request_key = ${key}`;
  if (!marker) return undefined;
  return marker.status === 'failed'
    ? { status: 'failed', code: marker.error_code ?? 'ALLOCATION_FAILED' }
    : { status: 'pending' };
}

/** Remember a request answered 202, so its status can be reported before its decision lands. */
export async function recordPendingAllocation(sql: Sql, item: { questId: number; key: string; address: string; points: number }) {
  await sql`
    insert into allocation_requests (quest_id, request_key, address, points)
    values (${item.questId}, ${item.key}, ${item.address}, ${item.points})
    on conflict (quest_id, request_key) do update set status = 'pending', error_code = null, updated_at = now()
    where allocation_requests.status = 'failed'`;
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
  batch: { id: string; questId: number; ownerId: string; digest: string; total: number },
): Promise<{ row: BatchRow; created: boolean }> {
  const [inserted] = await sql<BatchRow[]>`
    insert into batches (id, quest_id, owner_id, items_digest, total)
    values (${batch.id}, ${batch.questId}, ${batch.ownerId}, ${batch.digest}, ${batch.total})
    on conflict (id) do nothing
    returning *`;
  if (inserted) return { row: inserted, created: true };
  const row = await getBatch(sql, batch.questId, batch.id);
  if (!row) throw new Error(`batch ${batch.id} exists for another quest`);
  return { row, created: false };
}

export async function getBatch(sql: Sql, questId: number, batchId: string): Promise<BatchRow | undefined> {
  const [row] = await sql<BatchRow[]>`select * from batches where id = ${batchId} and quest_id = ${questId}`;
  return row;
}

export type BatchItemResult =
  | { index: number; status: 'completed'; payout: { id: string; amount: number; created_at: string; account: { pass: string } } }
  | { index: number; status: 'rejected'; address: string; points: number; code: string };

/** A window of a batch's per-item results, in item order. */
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
      select p.item_index, 'p' as kind, p.id, p.amount, p.created_at, a.pass_address as address, null as code
      from payouts p join accounts a on a.id = p.account_id where p.batch_id = ${batchId}
      union all
      select r.item_index, 'r', null, r.points, r.created_at, r.address, r.error_code
      from allocation_rejections r where r.batch_id = ${batchId}
    ) x order by item_index limit ${limit} offset ${offset}`;
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

/** Thrown when a batch chunk finds the batch already advanced past its start (see below). */
export class BatchProgressMoved extends Error {
  override readonly name = 'BatchProgressMoved';
}

/**
 * The statement that commits a batch chunk's progress, for ApplyOptions.afterWrites: it advances
 * the batch only from where the chunk started. If another copy of the job got there first, the
 * division by zero aborts the transaction (this statement is pipelined with COMMIT, so the check
 * must fail in SQL) and the promise rejects with BatchProgressMoved: the chunk is not applied twice.
 */
export function advanceBatchProgress(
  tx: Sql,
  p: { batchId: string; start: number; count: number; succeeded: number; failed: number },
): Promise<unknown> {
  return tx`
    with moved as (
      update batches set
        processed = processed + ${p.count}, succeeded = succeeded + ${p.succeeded}, failed = failed + ${p.failed},
        status = case when processed + ${p.count} = total then 'completed' else 'processing' end,
        completed_at = case when processed + ${p.count} = total then now() end,
        updated_at = now()
      where id = ${p.batchId} and processed = ${p.start}
      returning 1)
    select 1 / count(*)::int as guard from moved`.catch((error: { code?: string }) => {
    throw error?.code === '22012' ? new BatchProgressMoved() : error;
  });
}
