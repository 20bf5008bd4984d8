import type { BatchJobData, JobReply, RequestItem, RequestOutcome } from '@quest/domain';
import type { JobState, QueueSettings } from './partitions.ts';

/** The API's side of the allocation pipeline, as the API sees it; allocator.ts implements it. */

/**
 * How one request (an allocation or a reversal) travelled: its decision came back (`decided`), the job failed (`failed`: a bug
 * or a permanent error, nothing applied), or no usable reply came within the wait (`undecided`),
 * with where its job stood then — queued, finished (its reply was lost: the database has the
 * decision), failed, or unknown (gone from Redis). What to answer then is the caller's business;
 * the transport knows nothing about where decisions are stored.
 */
export type Delivery =
  | { kind: 'decided'; outcome: RequestOutcome }
  | { kind: 'failed' }
  | { kind: 'undecided'; reason: 'timeout' | 'lost' | 'unreadable'; job: JobState; jobId: string; enqueuedAt: number };

export interface AllocatorOptions extends QueueSettings {
  /** How long a request waits for its decision before it is answered 202 (pending). */
  waitMs: number;
  /** Most items coalesced into one job. */
  maxItemsPerJob?: number;
  /** Seconds finished jobs are kept in Redis (waiters need them; must be ≥ 2 × waitMs). */
  retentionSeconds?: number;
}

/** The API's handle on the allocation pipeline: the transport, from enqueue to reply. */
export interface Allocator {
  /**
   * Enqueue one request — an allocation or a reversal — (coalesced with others of its partition, in
   * arrival order) and wait for its decision.
   */
  allocate(item: RequestItem): Promise<Delivery>;
  /**
   * Queue a batch job (deduplicated by batch id while one is unfinished, so concurrent retries share
   * it) and wait for its reply up to `waitMs`; undefined when none came.
   */
  runBatch(data: Omit<BatchJobData, 'reply'>, opts?: { waitMs?: number }): Promise<JobReply<'batch'> | undefined>;
  ping(): Promise<void>;
  /** Worker processes alive in the pool (members whose heartbeat has not expired, on Redis's clock). */
  liveWorkers(): Promise<number>;
  close(): Promise<void>;
  /** This process's reply stream (workers deliver its jobs' decisions there). */
  readonly replyKey?: string;
}
