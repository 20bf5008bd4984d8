import type { Job } from 'bullmq';
import { type AllocateJobResult, type AllocationOutcome, allocateJob, type BatchJobResult, batchJob } from '@quest/domain';
import {
  advanceBatchProgress,
  applyAllocations,
  BatchProgressMoved,
  classifyDbError,
  type LedgerItem,
  type Sql,
} from '@quest/db';

export interface ProcessorDeps {
  sql: Sql;
  workerId: string;
  maxAttempts: number;
  retryBaseMs: number;
  batchChunkSize: number;
  logger: { warn(obj: object, msg?: string): void; error(obj: object, msg?: string): void };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Run `fn`, retrying transient database errors (connection loss, serialization failure, deadlock)
 * inside the job with exponential backoff. Retrying here, not through BullMQ, keeps the job at the
 * head of its partition: a BullMQ retry would let later jobs overtake it. Returns undefined when
 * the attempts are spent or the error is permanent.
 */
async function withRetry<T>(deps: ProcessorDeps, what: object, fn: (attempt: number) => Promise<T>): Promise<T | undefined> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn(attempt);
    } catch (error) {
      if (error instanceof BatchProgressMoved) throw error;
      const kind = classifyDbError(error);
      switch (kind) {
        case 'transient':
          if (attempt < deps.maxAttempts) {
            deps.logger.warn({ ...what, err: error, attempt }, 'transient database error, retrying');
            await sleep(deps.retryBaseMs * 2 ** (attempt - 1));
            continue;
          }
          deps.logger.error({ ...what, err: error, attempt }, 'giving up after transient errors');
          return undefined;
        case 'permanent':
          deps.logger.error({ ...what, err: error }, 'permanent error while applying allocations');
          return undefined;
        default: {
          const unreachable: never = kind;
          throw new Error(`unknown error kind ${unreachable}`);
        }
      }
    }
  }
}

async function markFailed(deps: ProcessorDeps, items: readonly LedgerItem[]) {
  // Best effort: the database may be what failed. Clients answered 202 see "failed" on the status
  // endpoint; nothing was credited, so a retry with the same key is safe.
  await deps.sql`
    update allocation_requests r set status = 'failed', error_code = 'ALLOCATION_FAILED', updated_at = now()
    from unnest(${items.map((i) => i.questId)}::int[], ${items.map((i) => i.key)}::text[]) as v(quest_id, request_key)
    where r.quest_id = v.quest_id and r.request_key = v.request_key`.catch(() => {});
}

const FAILED: AllocationOutcome = { status: 'failed', code: 'ALLOCATION_FAILED' };

export async function processAllocate(deps: ProcessorDeps, job: Job): Promise<AllocateJobResult> {
  const { items } = allocateJob.data.parse(job.data);
  // On a job's first delivery and first try, only client-keyed items can have a stored outcome; a
  // redelivered job (its worker died) or a retry (a commit may have landed) looks up every item.
  const firstDelivery = (job.attemptsStarted ?? 1) <= 1 && !job.stalledCounter;
  const lookup = (attempt: number) => (firstDelivery && attempt === 1 ? 'idempotent' : 'all');
  const outcomes = await withRetry(deps, { jobId: job.id, items: items.length }, (attempt) =>
    applyAllocations(deps.sql, items, { lookup: lookup(attempt) }),
  );
  if (outcomes) return { outcomes, worker: deps.workerId };
  if (items.length === 1) {
    await markFailed(deps, items);
    return { outcomes: [FAILED], worker: deps.workerId };
  }
  // A coalesced job carries other clients' requests: one item that cannot be applied must not fail
  // them all. Apply the items one by one, still in order, so only the culprit fails.
  const single: AllocationOutcome[] = [];
  for (const item of items) {
    const [outcome] =
      (await withRetry(deps, { jobId: job.id, key: item.key }, () => applyAllocations(deps.sql, [item], { lookup: 'all' }))) ??
      [];
    if (!outcome) await markFailed(deps, [item]);
    single.push(outcome ?? FAILED);
  }
  return { outcomes: single, worker: deps.workerId };
}

interface BatchRow {
  status: 'pending' | 'processing' | 'completed' | 'failed';
  total: number;
  processed: number;
  succeeded: number;
  failed: number;
}

/**
 * Apply a batch in chunks, one transaction per chunk. Each chunk's transaction also advances
 * batches.processed, guarded by its expected value, so a worker killed mid-batch resumes exactly
 * where the last committed chunk ended: no item is lost or applied twice.
 */
export async function processBatch(deps: ProcessorDeps, job: Job): Promise<BatchJobResult> {
  const data = batchJob.data.parse(job.data);
  const { sql } = deps;
  const load = async () => {
    const [row] = await sql<
      BatchRow[]
    >`select status, total, processed, succeeded, failed from batches where id = ${data.batchId}`;
    if (!row) throw new Error(`batch ${data.batchId} does not exist`);
    return row;
  };
  const summary = (row: BatchRow, status: 'completed' | 'failed'): BatchJobResult => ({
    batchId: data.batchId,
    status,
    total: row.total,
    succeeded: row.succeeded,
    failed: row.failed,
    worker: deps.workerId,
  });

  let row = await withRetry(deps, { batchId: data.batchId }, load);
  if (!row)
    return {
      batchId: data.batchId,
      status: 'failed',
      total: data.addresses.length,
      succeeded: 0,
      failed: 0,
      worker: deps.workerId,
    };
  if (row.status === 'completed') return summary(row, 'completed');
  if (row.total !== data.addresses.length)
    throw new Error(`batch ${data.batchId}: job has ${data.addresses.length} items, row says ${row.total}`);
  await sql`update batches set status = 'processing', error_code = null, updated_at = now() where id = ${data.batchId} and status <> 'completed'`;

  while (row.processed < row.total) {
    const start = row.processed;
    const end = Math.min(start + deps.batchChunkSize, row.total);
    const items: LedgerItem[] = [];
    for (let i = start; i < end; i++) {
      items.push({
        key: `${data.batchId}:${i}`,
        questId: data.questId,
        points: data.points[i]!,
        address: data.addresses[i]!,
        batchId: data.batchId,
        itemIndex: i,
      });
    }
    const n = end - start;
    try {
      const applied = await withRetry(deps, { batchId: data.batchId, start }, () =>
        applyAllocations(sql, items, {
          lookup: 'none',
          afterWrites: (tx, s) => advanceBatchProgress(tx, { batchId: data.batchId, start, count: n, ...s }),
        }),
      );
      if (!applied) {
        await sql`update batches set status = 'failed', error_code = 'ALLOCATION_FAILED', updated_at = now() where id = ${data.batchId}`.catch(
          () => {},
        );
        const latest = (await load().catch(() => undefined)) ?? row;
        return summary(latest, 'failed');
      }
    } catch (error) {
      if (!(error instanceof BatchProgressMoved)) throw error;
      // Someone else (a redelivered copy of this job) advanced the batch: continue from there.
    }
    const next = await withRetry(deps, { batchId: data.batchId }, load);
    if (!next) return summary(row, 'failed');
    row = next;
  }
  return summary(row, 'completed');
}

export function createProcessor(deps: ProcessorDeps) {
  return async (job: Job): Promise<unknown> => {
    switch (job.name) {
      case allocateJob.name:
        return processAllocate(deps, job);
      case batchJob.name:
        return processBatch(deps, job);
      default:
        throw new Error(`unknown job name ${job.name}`);
    }
  };
}
