import type { Job } from 'bullmq';
import {
  type AllocateJobResult,
  type AllocationItem,
  type AllocationOutcome,
  allocateJob,
  type BatchJobResult,
  batchJob,
} from '@quest/domain';
import {
  applyBatchChunk,
  applyRequests,
  BatchProgressMoved,
  type BatchRow,
  classifyDbError,
  failBatch,
  getBatchItems,
  getBatchProgress,
  type LedgerItem,
  markAllocationsFailed,
  type Sql,
  startBatch,
  withTimeout,
} from '@quest/db';
import { partitionOfQueueName, replyJobKey } from '@quest/queue';
import { decisionSeconds, jobItems } from './metrics.ts';

export interface ProcessorDeps {
  sql: Sql;
  workerId: string;
  /** First pause between two attempts; doubles up to retryMaxMs. */
  retryBaseMs: number;
  retryMaxMs: number;
  /** A database attempt that has not settled by then is abandoned and retried. */
  attemptTimeoutMs: number;
  batchChunkSize: number;
  /**
   * Deliver a decided job's result to the API process that queued it (its `replyTo` stream).
   * Advisory: the decision is committed before, and a reply that does not arrive only makes the
   * API read the database.
   */
  reply?: (replyTo: string, jobKey: string, result: unknown) => Promise<unknown>;
  logger: {
    info?(obj: object, msg?: string): void;
    warn(obj: object, msg?: string): void;
    error(obj: object, msg?: string): void;
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Run `fn` until it succeeds or fails for a reason that retrying cannot change. Anything else —
 * connection loss, a restart, a timeout, a serialization failure, a conflict with an outcome
 * another worker committed, a database that is misconfigured for now — is retried inside the job,
 * with capped exponential backoff and a time limit per attempt, for as long as it takes: the job
 * keeps the head of its partition (a BullMQ retry would let later jobs overtake it), and nothing is
 * ever answered failed because the database was away. A worker stopped meanwhile leaves the job
 * active; BullMQ hands it to another worker, at the head of the queue, once its lock expires.
 * `fn` is told whether an earlier attempt may have committed (then it must read stored outcomes).
 * Returns undefined only for a permanent error.
 */
async function withRetry<T>(deps: ProcessorDeps, what: object, fn: (retry: boolean) => Promise<T>): Promise<T | undefined> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await withTimeout(fn(attempt > 1), deps.attemptTimeoutMs);
    } catch (error) {
      if (error instanceof BatchProgressMoved) throw error;
      const kind = classifyDbError(error);
      switch (kind) {
        case 'transient':
        case 'conflict':
        case 'configuration': {
          const pause = Math.min(deps.retryMaxMs, deps.retryBaseMs * 2 ** Math.min(attempt - 1, 20));
          const log = kind === 'configuration' ? deps.logger.error : deps.logger.warn;
          log.call(deps.logger, { ...what, err: error, attempt, kind, pauseMs: pause }, `${kind} database error, retrying`);
          await sleep(pause);
          continue;
        }
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

const FAILED: AllocationOutcome = { status: 'failed', code: 'ALLOCATION_FAILED' };

async function giveUp(deps: ProcessorDeps, items: readonly AllocationItem[]): Promise<AllocationOutcome> {
  // The marker says failed (unless an outcome exists), so a client answered 202 sees it and may
  // retry with the same key; written with the same patience as the ledger itself.
  await withRetry(deps, { keys: items.map((i) => i.key) }, () =>
    markAllocationsFailed(
      deps.sql,
      items.map((i) => ({ ...i, enqueuedAt: i.enqueuedAt ?? 0 })),
    ),
  );
  return FAILED;
}

/** Partition number of a job, from its queue's name. */
const partitionOfJob = (job: Job) => partitionOfQueueName(job.queueName ?? '');

/**
 * The decision's metrics and its log line: the request ids of its items (the API's x-request-id),
 * so one grep of a request id finds both the HTTP line and the decision.
 */
function recordDecision(
  deps: ProcessorDeps,
  job: Job,
  items: readonly AllocationItem[],
  result: AllocateJobResult,
  startedAt: number,
) {
  const now = Date.now();
  jobItems.observe(items.length);
  for (const item of items) if (item.enqueuedAt) decisionSeconds.observe(Math.max(0, now - item.enqueuedAt) / 1000);
  const outcomes: Record<string, number> = {};
  for (const o of result.outcomes) outcomes[o.status] = (outcomes[o.status] ?? 0) + 1;
  deps.logger.info?.(
    {
      jobId: job.id,
      partition: partitionOfJob(job),
      items: items.length,
      requestIds: items.map((i) => i.requestId ?? null),
      outcomes,
      durationMs: now - startedAt,
    },
    'allocations decided',
  );
}

export async function processAllocate(deps: ProcessorDeps, job: Job): Promise<AllocateJobResult> {
  const startedAt = Date.now();
  const { items } = allocateJob.data.parse(job.data);
  const done = (result: AllocateJobResult) => {
    recordDecision(deps, job, items, result, startedAt);
    return result;
  };
  // On a job's first delivery and first try, only client-keyed items can have a stored outcome; a
  // redelivered job (its worker died), or any retry (a commit may have landed), reads them all.
  const firstDelivery = (job.attemptsStarted ?? 1) <= 1 && !job.stalledCounter;
  const ledgerItems: LedgerItem[] = items;
  const outcomes = await withRetry(deps, { jobId: job.id, items: items.length }, (retry) =>
    applyRequests(deps.sql, ledgerItems, { firstDelivery: firstDelivery && !retry }),
  );
  if (outcomes) return done({ outcomes, worker: deps.workerId });
  if (items.length === 1) return done({ outcomes: [await giveUp(deps, items)], worker: deps.workerId });
  // A coalesced job carries other clients' requests: one item that cannot be applied must not fail
  // them all. Apply the items one by one, still in order, so only the culprit fails.
  const single: AllocationOutcome[] = [];
  for (const item of items) {
    const [outcome] =
      (await withRetry(deps, { jobId: job.id, key: item.key }, () =>
        applyRequests(deps.sql, [item], { firstDelivery: false }),
      )) ?? [];
    single.push(outcome ?? (await giveUp(deps, [item])));
  }
  return done({ outcomes: single, worker: deps.workerId });
}

/**
 * Apply a batch in chunks, one transaction per chunk, reading its items from the batch row. Each
 * chunk's transaction also advances the batch's progress, guarded by its expected value, so a
 * worker killed mid-batch, or a re-driven copy of the job, resumes exactly where the last committed
 * chunk ended: no item is lost or applied twice.
 */
export async function processBatch(deps: ProcessorDeps, job: Job): Promise<BatchJobResult> {
  const startedAt = Date.now();
  const { batchId } = batchJob.data.parse(job.data);
  const { sql } = deps;
  const summary = (row: BatchRow, status: 'completed' | 'failed'): BatchJobResult => {
    const result = { batchId, status, total: row.total, succeeded: row.succeeded, failed: row.failed, worker: deps.workerId };
    deps.logger.info?.(
      { jobId: job.id, partition: partitionOfJob(job), batchId, status, total: row.total, durationMs: Date.now() - startedAt },
      'batch decided',
    );
    return result;
  };
  const load = () =>
    withRetry(deps, { batchId }, async () => {
      const row = await getBatchProgress(sql, batchId);
      if (!row) throw Object.assign(new Error(`batch ${batchId} does not exist`), { code: 'BATCH_MISSING' });
      return row;
    });
  const fail = async (row: BatchRow) => {
    await withRetry(deps, { batchId }, () => failBatch(sql, batchId));
    return summary((await load()) ?? row, 'failed');
  };

  let row = await load();
  if (!row) return { batchId, status: 'failed', total: 0, succeeded: 0, failed: 0, worker: deps.workerId };
  if (row.status === 'completed') return summary(row, 'completed');
  await withRetry(deps, { batchId }, () => startBatch(sql, batchId));

  while (row.processed < row.total) {
    const start = row.processed;
    const end = Math.min(start + deps.batchChunkSize, row.total);
    const stored = await withRetry(deps, { batchId, start }, () => getBatchItems(sql, batchId, start, end));
    if (!stored || stored.addresses.length !== end - start) return fail(row);
    const items: LedgerItem[] = stored.addresses.map((address, n) => ({
      key: `${batchId}:${start + n}`,
      questId: row!.quest_id,
      points: stored.points[n]!,
      address,
      batchId,
      itemIndex: start + n,
    }));
    try {
      const applied = await withRetry(deps, { batchId, start }, () => applyBatchChunk(sql, { batchId, start, items }));
      if (!applied) return fail(row);
    } catch (error) {
      if (!(error instanceof BatchProgressMoved)) throw error;
      // Someone else (a redelivered or re-driven copy of this job) advanced the batch: continue from there.
    }
    const next = await load();
    if (!next) return fail(row);
    row = next;
  }
  return summary(row, 'completed');
}

type Handler = (deps: ProcessorDeps, job: Job) => Promise<unknown>;

/** The job catalogue's consumers, by job name. */
const HANDLERS: { readonly [name: string]: Handler } = {
  [allocateJob.name]: processAllocate,
  [batchJob.name]: processBatch,
};

/** Send the reply without holding up the partition: the next job need not wait for it. */
function reply(deps: ProcessorDeps, job: Job, result: unknown) {
  const to = (job.data as { replyTo?: unknown } | undefined)?.replyTo;
  if (typeof to !== 'string' || !deps.reply || job.id === undefined) return;
  deps
    .reply(to, replyJobKey(job.queueName, job.id), result)
    .catch((err: unknown) =>
      deps.logger.warn({ err, jobId: job.id, replyTo: to }, 'reply not delivered; the API reads the database instead'),
    );
}

export function createProcessor(deps: ProcessorDeps) {
  return async (job: Job): Promise<unknown> => {
    const handler = HANDLERS[job.name];
    try {
      if (!handler) throw new Error(`unknown job name ${job.name}`);
      const result = await handler(deps, job);
      reply(deps, job, result);
      return result;
    } catch (error) {
      // The job fails in BullMQ: say so at once rather than let the waiter time out.
      reply(deps, job, { failed: true });
      throw error;
    }
  };
}
