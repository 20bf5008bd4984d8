import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { assignPartitions } from '@quest/domain';
import { redisConnection } from './connection.ts';
import { membersKey, partitionQueueName, partitionsKey, reconcilerLastRunKey } from './names.ts';

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

/** Pool members alive now (heartbeat not expired), on Redis's clock. */
export async function liveMembers(redis: Redis, prefix: string): Promise<number> {
  const [seconds, micros] = await redis.time();
  return redis.zcount(membersKey(prefix), Number(seconds) * 1000 + Math.floor(Number(micros) / 1000), '+inf');
}

/** The pool as Redis holds it, read once (`quest-admin status`, the console's pool view). */
export interface PoolSnapshot {
  /** The partition count the queues were set up with (the configured one if none is recorded). */
  partitions: number;
  /** Live members (heartbeat not expired) and the partitions `assignPartitions` deals each. */
  members: { id: string; expiresAt: number; partitions: number[] }[];
  queues: PartitionQueueStats[];
  /** The reconciler's last-run record as stored (JSON written by the reconciler), or null. */
  reconcilerLastRun: string | null;
  /** Redis's clock at the read (ms since epoch). */
  redisNow: number;
}

/**
 * Read the pool on a short-lived connection of its own that gives up quickly: live members (the
 * same sorted set and the same deal the workers use, so the listed ownership is what the workers
 * converge to within a heartbeat), each partition queue's depth, and the reconciler's last run.
 * A Redis that cannot be reached throws what `unreachable` makes of the error.
 */
export async function readPoolSnapshot(
  url: string,
  prefix: string,
  configuredPartitions: number,
  unreachable: (error: Error) => Error,
): Promise<PoolSnapshot> {
  const redis = redisConnection(url, {
    maxRetriesPerRequest: 1,
    connectTimeout: 2000,
    commandTimeout: 5000,
    retryStrategy: () => null,
    lazyConnect: true,
  });
  redis.on('error', () => {});
  try {
    await redis.connect().catch((error: unknown) => {
      throw unreachable(error as Error);
    });
    const [seconds, micros] = await redis.time();
    const redisNow = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
    const recorded = await redis.get(partitionsKey(prefix));
    const partitions = recorded ? Number(recorded) : configuredPartitions;
    const flat = await redis.zrangebyscore(membersKey(prefix), redisNow, '+inf', 'WITHSCORES');
    const live: { id: string; expiresAt: number }[] = [];
    for (let i = 0; i < flat.length; i += 2) live.push({ id: flat[i]!, expiresAt: Number(flat[i + 1]) });
    const ids = live.map((m) => m.id);
    const members = live.map((m) => ({ ...m, partitions: assignPartitions(ids, m.id, partitions) }));
    const reader = new QueueStatsReader(redis, prefix, partitions);
    const queues = await reader.read().finally(() => reader.close());
    const reconcilerLastRun = await redis.get(reconcilerLastRunKey(prefix));
    return { partitions, members, queues, reconcilerLastRun, redisNow };
  } finally {
    redis.disconnect();
  }
}
