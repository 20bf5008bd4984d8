import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { partitionQueueName } from './names.ts';

export interface PartitionQueueStats {
  partition: number;
  waiting: number;
  active: number;
  /** Enqueue time (ms since epoch) of the oldest waiting job, or null when none waits. */
  oldestWaitingAt: number | null;
}

/**
 * Reads the depth of every partition queue: waiting and active counts and the oldest waiting job,
 * a handful of Redis commands per partition. Callers sample it on an interval (metrics) or once
 * (`quest-admin status`), never per scrape. The queues share the caller's Redis connection.
 */
export class QueueStatsReader {
  private readonly queues: Queue[];

  constructor(connection: Redis, prefix: string, partitions: number) {
    this.queues = Array.from({ length: partitions }, (_, p) => {
      const q = new Queue(partitionQueueName(p), { connection, prefix });
      q.on('error', () => {});
      return q;
    });
  }

  async read(): Promise<PartitionQueueStats[]> {
    return Promise.all(
      this.queues.map(async (q, partition) => {
        const [counts, oldest] = await Promise.all([
          q.getJobCounts('waiting', 'active', 'prioritized'),
          // The wait list is pushed at its head: ascending order starts at the oldest job.
          q.getJobs(['wait'], 0, 0, true),
        ]);
        return {
          partition,
          waiting: (counts.waiting ?? 0) + (counts.prioritized ?? 0),
          active: counts.active ?? 0,
          oldestWaitingAt: oldest[0]?.timestamp ?? null,
        };
      }),
    );
  }

  async close(): Promise<void> {
    await Promise.allSettled(this.queues.map((q) => q.close()));
  }
}
