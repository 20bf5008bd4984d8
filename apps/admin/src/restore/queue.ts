import type { Redis } from 'ioredis';
import { masterConnections, partitionQueueName, redisConnection } from '@quest/queue';
import { CliError } from '../context.ts';

/**
 * What Redis remembers of the service's past, read key by key (no BullMQ: the jobs are only read
 * and then deleted), and the fence that makes a restored database the only truth again.
 */

export interface RememberedWork {
  /** Request items of allocate jobs still held (queued, running, or finished and retained). */
  items: { questId: number; key: string }[];
  /** Batches named by batch jobs still held. */
  batchIds: string[];
  /** Requests whose Idempotency-Key claim is still held (`<prefix>:idem:<request key>`). */
  claimedKeys: string[];
  /** Live pool members: workers running right now. */
  liveWorkers: number;
}

export function openRedis(url: string): Redis {
  const redis = redisConnection(url, {
    maxRetriesPerRequest: 1,
    connectTimeout: 2000,
    retryStrategy: () => null,
    lazyConnect: true,
  });
  redis.on('error', () => {});
  return redis;
}

export async function connect(redis: Redis, where: string): Promise<void> {
  await redis.connect().catch((error: Error) => {
    throw new CliError('REDIS_UNAVAILABLE', `cannot reach Redis at ${where}: ${error.message}`);
  });
}

async function* scanKeys(redis: Redis, match: string): AsyncGenerator<{ node: Redis; keys: string[] }> {
  for (const node of masterConnections(redis)) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', match, 'COUNT', 1000);
      cursor = next;
      if (keys.length) yield { node, keys };
    } while (cursor !== '0');
  }
}

/** A BullMQ job's hash is `<prefix>:<queue>:<job id>`; every other key of the queue has a name after the queue. */
const JOB_ID = /^\d+$/;

export async function readRememberedWork(redis: Redis, prefix: string, partitions: number): Promise<RememberedWork> {
  const work: RememberedWork = { items: [], batchIds: [], claimedKeys: [], liveWorkers: 0 };
  for (let p = 0; p < partitions; p++) {
    const queue = `${prefix}:${partitionQueueName(p)}:`;
    for await (const { node, keys } of scanKeys(redis, `${queue}*`)) {
      for (const key of keys.filter((k) => JOB_ID.test(k.slice(queue.length)))) {
        const [name, data] = await node.hmget(key, 'name', 'data');
        if (!data) continue;
        const parsed = JSON.parse(data) as { items?: { questId: number; key: string }[]; batchId?: string };
        if (name === 'batch' && parsed.batchId) work.batchIds.push(parsed.batchId);
        for (const item of parsed.items ?? []) work.items.push({ questId: item.questId, key: item.key });
      }
    }
  }
  const idem = `${prefix}:idem:`;
  for await (const { keys } of scanKeys(redis, `${idem}*`)) work.claimedKeys.push(...keys.map((k) => k.slice(idem.length)));
  const [seconds] = await redis.time();
  work.liveWorkers = await redis.zcount(`${prefix}:{pool}:members`, Number(seconds) * 1000, '+inf');
  return work;
}

/**
 * Delete every key of the deployment's prefix but the Idempotency-Key claims: the partition queues
 * (jobs naming requests the restored ledger may not have), the webhook delivery queue, reply streams
 * and the pool's state. The service then starts as after a Redis loss, and the reconciler re-drives
 * the pending requests, unfinished batches and due deliveries the database holds. Returns the keys deleted.
 */
export async function fenceQueue(redis: Redis, prefix: string): Promise<number> {
  let deleted = 0;
  const keep = `${prefix}:idem:`;
  for await (const { node, keys } of scanKeys(redis, `${prefix}:*`)) {
    const doomed = keys.filter((k) => !k.startsWith(keep));
    // One key per command: on a cluster the keys of one SCAN page span many slots.
    await Promise.all(doomed.map((k) => node.unlink(k)));
    deleted += doomed.length;
  }
  return deleted;
}
