import { describe, expect } from 'vitest';
import { createAllocator, PartitionCountMismatch, redisConnection } from '@quest/queue';
import { PartitionPool } from '@quest/worker/pool';
import {
  test as base,
  completedJobs,
  createQuests,
  type ServiceProcess,
  startWorker,
  type System,
  waitForPool,
} from '@quest/testing';

const PARTITIONS = 4;

/**
 * The queue level, without the API: this test's own producer (`createAllocator`) in front of real
 * worker processes. `pool` (per file) is two workers that have settled on sharing the partitions.
 */
const test = base.extend('pool', { scope: 'file' }, async ({ database, redis }, { onCleanup }) => {
  const env = {
    DATABASE_URL: database.url,
    REDIS_URL: redis.url,
    QUEUE_PREFIX: redis.prefix,
    QUEUE_PARTITIONS: String(PARTITIONS),
    LOG_LEVEL: 'info',
    DATABASE_POOL_MAX: '4',
  };
  const workers: ServiceProcess[] = [];
  onCleanup(async () => {
    await Promise.all(workers.map((w) => w.stop('SIGKILL')));
  });
  workers.push(...(await Promise.all([startWorker(env), startWorker(env)])));
  // waitForPool reads only the Redis prefix and the worker processes of a System.
  const pool = { redis, workers, env } as Pick<System, 'redis' | 'workers' | 'env'> as System;
  await waitForPool(pool);
  return pool;
});

describe('allocation pipeline (queue level)', () => {
  test('decides allocations through worker processes and spreads partitions over them', async ({
    pool,
    database,
    redis,
    owner,
    accounts,
    onTestFinished,
  }) => {
    const allocator = await createAllocator({
      redisUrl: redis.url,
      prefix: redis.prefix,
      partitions: PARTITIONS,
      waitMs: 10_000,
      retentionSeconds: 600,
    });
    onTestFinished(() => allocator.close());
    // Two quests per partition, so each worker's partitions have work.
    const questIds = await createQuests(database.sql, 2 * PARTITIONS, { ownerId: owner.id, totalPoints: 1_000_000 });
    const results = await Promise.all(
      Array.from({ length: 400 }, (_, i) =>
        allocator.allocate({
          key: `k${i}`,
          questId: questIds[i % questIds.length]!,
          points: 1,
          address: accounts[i % accounts.length]!,
        }),
      ),
    );
    expect(results.filter((r) => r.kind !== 'decided' || r.outcome.status !== 'completed')).toEqual([]);
    const [{ count }] = (await database.sql`
      select count(*)::int8 as count from payouts where quest_id = any(${questIds}::int[])`) as unknown as [{ count: number }];
    expect(count).toBe(400);
    // Which process decided each job: both did.
    const processedBy = new Set((await completedJobs(pool)).map((job) => job.processedBy).filter(Boolean));
    expect(processedBy.size).toBe(2);
  });
});

describe('partition count', () => {
  test('refuses a producer or a worker configured with another partition count than the queues have', async ({
    redis,
    onTestFinished,
  }) => {
    // The first producer records the partition count of this Redis prefix.
    const first = await createAllocator({ redisUrl: redis.url, prefix: redis.prefix, partitions: PARTITIONS, waitMs: 1000 });
    await first.close();
    await expect(
      createAllocator({ redisUrl: redis.url, prefix: redis.prefix, partitions: PARTITIONS + 1, waitMs: 1000 }),
    ).rejects.toBeInstanceOf(PartitionCountMismatch);
    const connection = redisConnection(redis.url);
    onTestFinished(() => connection.disconnect());
    const pool = new PartitionPool({
      connection,
      prefix: redis.prefix,
      partitions: PARTITIONS * 2,
      memberId: 'mismatched',
      handlers: {
        allocate: () => Promise.reject(new Error('never runs')),
        batch: () => Promise.reject(new Error('never runs')),
      },
      logger: { info: () => {}, warn: () => {}, error: () => {} },
    });
    await expect(pool.start()).rejects.toBeInstanceOf(PartitionCountMismatch);
    await pool.close();
  });
});
