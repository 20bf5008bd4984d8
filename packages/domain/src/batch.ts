/**
 * A batch's progress and its view. The view is what GET /quests/{questId}/batches/{batchId}
 * answers (without its results) and what batch.completed carries: one builder for both, so the
 * route and the event cannot disagree. Pure: the ledger computes a chunk's effect here, and the
 * store writes what was computed (packages/db lifecycle.ts).
 */

export type BatchStatus = 'pending' | 'processing' | 'completed' | 'failed';

/** A batch's progress as stored: the columns of `batches` its view shows. */
export interface BatchProgress {
  id: string;
  status: BatchStatus;
  total: number;
  processed: number;
  succeeded: number;
  failed: number;
  created_at: Date;
  updated_at: Date;
  completed_at: Date | null;
}

/** A batch's progress and whose it is: what its completion event needs. */
export interface BatchState extends BatchProgress {
  owner_id: string;
  quest_id: number;
}

/** A batch as answered and announced (timestamps in ISO 8601 UTC, with milliseconds). */
export type BatchSummaryView = Omit<BatchProgress, 'created_at' | 'updated_at' | 'completed_at'> & {
  created_at: string;
  updated_at: string;
  completed_at: string | null;
};

export function batchSummaryView(b: BatchProgress): BatchSummaryView {
  return {
    id: b.id,
    status: b.status,
    total: b.total,
    processed: b.processed,
    succeeded: b.succeeded,
    failed: b.failed,
    created_at: b.created_at.toISOString(),
    updated_at: b.updated_at.toISOString(),
    completed_at: b.completed_at?.toISOString() ?? null,
  };
}

/** A slice of a batch decided in one ledger transaction: `count` items from index `start`. */
export interface BatchChunk {
  start: number;
  count: number;
  succeeded: number;
  failed: number;
}

/**
 * The batch after `chunk`, decided at `now`: `completed` (at `now`) with its last item, otherwise
 * `processing`. Undefined when the batch is not where the chunk starts (another copy of the job
 * advanced it): a chunk applies only from its start, so it is never applied twice.
 */
export function advanceBatchProgress<B extends BatchProgress>(batch: B, chunk: BatchChunk, now: Date): B | undefined {
  if (batch.processed !== chunk.start) return undefined;
  const processed = batch.processed + chunk.count;
  const completed = processed === batch.total;
  return {
    ...batch,
    status: completed ? 'completed' : 'processing',
    processed,
    succeeded: batch.succeeded + chunk.succeeded,
    failed: batch.failed + chunk.failed,
    updated_at: now,
    completed_at: completed ? now : null,
  };
}
