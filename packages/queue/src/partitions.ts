import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { type JobData, type JobName, partitionOf } from '@quest/domain';
import { assertPartitionCount } from './connection.ts';
import { partitionQueueName } from './names.ts';

export interface QueueSettings {
  redisUrl: string;
  prefix: string;
  partitions: number;
}

/**
 * Every job: one attempt (transient errors are retried inside the job, so it keeps its place; a
 * BullMQ retry would move it behind its successors), finished jobs kept `retentionSeconds` for
 * their waiters.
 */
export function jobOptions(retentionSeconds: number) {
  return { attempts: 1, removeOnComplete: { age: retentionSeconds }, removeOnFail: { age: 24 * 3600 } };
}

/** Where a job stands, as far as a waiter or the reconciler needs to know. */
export type JobState = 'queued' | 'completed' | 'failed' | 'unknown';

/** BullMQ states in which a job will still be processed. */
const QUEUED = new Set(['waiting', 'active', 'delayed', 'prioritized', 'waiting-children']);

const toJobState = (state: string): JobState =>
  QUEUED.has(state) ? 'queued' : state === 'completed' || state === 'failed' ? state : 'unknown';

/**
 * The partition queues, on one connection: the single place that sets up their topology and adds
 * and inspects jobs (the producer, the reconciler and the pool's start-up all go through it).
 * Quest q's jobs go to partition `partitionOf(q)`; each partition queue has global concurrency 1,
 * so at most one of its jobs is active anywhere and they are decided in enqueue order.
 */
export class PartitionQueues {
  private readonly queues: Queue[];

  constructor(
    private readonly connection: Redis,
    readonly settings: { prefix: string; partitions: number },
  ) {
    this.queues = Array.from({ length: settings.partitions }, (_, p) => {
      const queue = new Queue(partitionQueueName(p), { connection, prefix: settings.prefix });
      // Connection errors surface per call (as 503s or retried runs); they must not crash the process.
      queue.on('error', () => {});
      return queue;
    });
  }

  partitionOf(questId: number): number {
    return partitionOf(questId, this.settings.partitions);
  }

  queueName(partition: number): string {
    return this.queues[partition]!.name;
  }

  /**
   * Refuse a partition count other than the one the queues already have (a producer and a consumer
   * that disagreed would route a quest to two queues and lose its order), and make sure each
   * partition runs one job at a time. Idempotent: run at every start and after Redis lost its data.
   */
  async ensureTopology(): Promise<void> {
    await assertPartitionCount(this.connection, this.settings.prefix, this.settings.partitions);
    await Promise.all(this.queues.map((q) => q.setGlobalConcurrency(1)));
  }

  /** Add a job; with `deduplicationId`, a job with that id still unfinished is returned instead of a new one. */
  async add<N extends JobName>(
    partition: number,
    name: N,
    data: JobData<N>,
    opts: { retentionSeconds: number; deduplicationId?: string },
  ): Promise<string> {
    const job = await this.queues[partition]!.add(name, data, {
      ...jobOptions(opts.retentionSeconds),
      ...(opts.deduplicationId ? { deduplication: { id: opts.deduplicationId } } : {}),
    });
    return job.id!;
  }

  /**
   * Where job `jobId` of a partition stands. With `token` (the reply token the job was added with),
   * a job under that id that carries another token is not ours — its id was reused after Redis lost
   * its data — and answers `unknown`, never another job's state.
   */
  async state(partition: number, jobId: string, token?: string): Promise<JobState> {
    const queue = this.queues[partition]!;
    if (token === undefined) return toJobState(await queue.getJobState(jobId));
    const job = await queue.getJob(jobId);
    if ((job?.data as { reply?: { token?: string } } | undefined)?.reply?.token !== token) return 'unknown';
    return toJobState(await job!.getState());
  }

  /** Jobs of a partition waiting for their turn, and active (0 or 1: global concurrency 1). */
  async backlog(partition: number): Promise<{ waiting: number; active: number }> {
    const counts = await this.queues[partition]!.getJobCounts('wait', 'prioritized', 'active');
    return { waiting: (counts.wait ?? 0) + (counts.prioritized ?? 0), active: counts.active ?? 0 };
  }

  /** The id of the unfinished job holding deduplication id `id`, if any; a stale hold is released. */
  async deduplicatedJob(partition: number, id: string): Promise<string | undefined> {
    const queue = this.queues[partition]!;
    const held = await queue.getDeduplicationJobId(id);
    if (!held) return undefined;
    if ((await this.state(partition, held)) === 'queued') return held;
    await queue.removeDeduplicationKey(id);
    return undefined;
  }

  async close(): Promise<void> {
    await Promise.allSettled(this.queues.map((q) => q.close()));
  }
}
