import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAllocator, PartitionCountMismatch, PartitionPool, partitionQueueName, type Allocator } from '@quest/queue';
import {
  createTestDatabase,
  createTestRedis,
  startWorker,
  type ServiceProcess,
  type TestDatabase,
  type TestRedis,
} from '@quest/testing';

const PARTITIONS = 4;
let db: TestDatabase;
let redis: TestRedis;
let allocator: Allocator;
const workers: ServiceProcess[] = [];
const addr = (n: number) => `0x${n.toString(16).padStart(40, '0')}`;

const workerEnv = () => ({
  DATABASE_URL: db.url,
  REDIS_URL: redis.url,
  QUEUE_PREFIX: redis.prefix,
  QUEUE_PARTITIONS: String(PARTITIONS),
  LOG_LEVEL: 'info',
});

beforeAll(async () => {
  [db, redis] = await Promise.all([createTestDatabase(), createTestRedis()]);
  await db.sql`insert into owners (id, name, pass_address) values ('own_t', 'T', ${addr(999_999)})`;
  await db.sql`insert into accounts (pass_address) select '0x' || lpad(to_hex(n), 40, '0') from generate_series(1, 100) n`;
  await db.sql`insert into quests (owner_id, name, start_at, end_at, total_points, points_remaining)
    select 'own_t', 'Q' || n, now() - interval '1 hour', now() + interval '1 day', 1000000, 1000000 from generate_series(1, 8) n`;
  allocator = await createAllocator({
    redisUrl: redis.url,
    prefix: redis.prefix,
    partitions: PARTITIONS,
    waitMs: 10_000,
    retentionSeconds: 600,
  });
});

afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop('SIGKILL')));
  await allocator?.close();
  await redis?.cleanup();
  await db?.drop();
});

describe('allocation pipeline (queue level)', () => {
  it('decides allocations through worker processes and spreads partitions over them', async () => {
    workers.push(...(await Promise.all([startWorker(workerEnv()), startWorker(workerEnv())])));
    // Let both members see each other and rebalance.
    await new Promise((r) => setTimeout(r, 2500));
    let n = 0;
    const results = await Promise.all(
      Array.from({ length: 400 }, (_, i) =>
        allocator.allocate({ key: `k${++n}`, questId: 1 + (i % 8), points: 1, address: addr(1 + (i % 100)) }),
      ),
    );
    expect(results.every((r) => r.status === 'completed')).toBe(true);
    const [{ count }] = (await db.sql`select count(*)::int8 as count from payouts`) as unknown as [{ count: number }];
    expect(count).toBe(400);
    // Which process decided each job.
    const processedBy = new Set<string>();
    for (let p = 0; p < PARTITIONS; p++) {
      const q = new Queue(partitionQueueName(p), { connection: { url: redis.url } as never, prefix: redis.prefix });
      for (const job of await q.getJobs(['completed'])) if (job.processedBy) processedBy.add(job.processedBy);
      await q.close();
    }
    expect(processedBy.size).toBe(2);
  });
});

describe('partition count', () => {
  it('refuses a producer or a worker configured with another partition count than the queues have', async () => {
    await expect(
      createAllocator({ redisUrl: redis.url, prefix: redis.prefix, partitions: PARTITIONS + 1, waitMs: 1000 }),
    ).rejects.toBeInstanceOf(PartitionCountMismatch);
    const pool = new PartitionPool({
      redisUrl: redis.url,
      prefix: redis.prefix,
      partitions: PARTITIONS * 2,
      memberId: 'mismatched',
      processor: async () => ({}),
      logger: { info: () => {}, warn: () => {}, error: () => {} },
    });
    await expect(pool.start()).rejects.toBeInstanceOf(PartitionCountMismatch);
    await pool.close();
  });
});
