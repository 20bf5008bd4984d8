import type { BatchJobData, BatchJobResult, JobContext } from '@quest/domain';
import {
  applyBatchChunk,
  BatchProgressMoved,
  type BatchRow,
  failBatch,
  getBatchItems,
  getBatchProgress,
  type LedgerItem,
  startBatch,
} from '@quest/db';
import { type HandlerDeps, withRetry } from './retry.ts';

/**
 * Apply a batch in chunks, one transaction per chunk, reading its items from the batch row. Each
 * chunk's transaction also advances the batch's progress, guarded by its expected value, so a
 * worker killed mid-batch, or a re-driven copy of the job, resumes exactly where the last committed
 * chunk ended: no item is lost or applied twice.
 */
export async function handleBatch(deps: HandlerDeps, data: BatchJobData, job: JobContext): Promise<BatchJobResult> {
  const startedAt = Date.now();
  const { batchId } = data;
  const { sql } = deps;
  const summary = (row: BatchRow, status: 'completed' | 'failed'): BatchJobResult => {
    const result = { batchId, status, total: row.total, succeeded: row.succeeded, failed: row.failed, worker: deps.workerId };
    deps.logger.info?.(
      { jobId: job.id, partition: job.partition, batchId, status, total: row.total, durationMs: Date.now() - startedAt },
      'batch decided',
    );
    return result;
  };
  const load = () =>
    withRetry(
      deps,
      { batchId },
      async () => {
        const row = await getBatchProgress(sql, batchId);
        if (!row) throw Object.assign(new Error(`batch ${batchId} does not exist`), { code: 'BATCH_MISSING' });
        return row;
      },
      job.signal,
    );
  const fail = async (row: BatchRow) => {
    await withRetry(deps, { batchId }, () => failBatch(sql, batchId), job.signal);
    return summary((await load()) ?? row, 'failed');
  };

  let row = await load();
  if (!row) return { batchId, status: 'failed', total: 0, succeeded: 0, failed: 0, worker: deps.workerId };
  if (row.status === 'completed') return summary(row, 'completed');
  await withRetry(deps, { batchId }, () => startBatch(sql, batchId), job.signal);

  while (row.processed < row.total) {
    const start = row.processed;
    const end = Math.min(start + deps.batchChunkSize, row.total);
    const stored = await withRetry(deps, { batchId, start }, () => getBatchItems(sql, batchId, start, end), job.signal);
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
      const applied = await withRetry(
        deps,
        { batchId, start },
        () => applyBatchChunk(sql, { batchId, start, items }),
        job.signal,
      );
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
