import { Redis, type RedisOptions } from 'ioredis';
import { partitionsKey } from './names.ts';

/**
 * Producers fail fast: no offline queue and a command timeout, so a POST answers 503 within a
 * second when Redis is down or hung instead of hanging. Consumers (workers, event listeners) wait
 * and reconnect forever (`maxRetriesPerRequest: null`, as BullMQ requires for blocking commands).
 */
export function producerConnection(url: string, commandTimeoutMs = 1000): Redis {
  return new Redis(url, {
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    commandTimeout: commandTimeoutMs,
    connectTimeout: 1000,
    retryStrategy: (times) => Math.min(times * 100, 1000),
  });
}

export function consumerConnectionOptions(url: string): RedisOptions {
  const u = new URL(url);
  return {
    host: u.hostname.replace(/^\[|\]$/g, ''),
    port: Number(u.port || 6379),
    username: u.username ? decodeURIComponent(u.username) : undefined,
    password: u.password ? decodeURIComponent(u.password) : undefined,
    db: u.pathname && u.pathname !== '/' ? Number(u.pathname.slice(1)) : 0,
    tls: u.protocol === 'rediss:' ? {} : undefined,
    maxRetriesPerRequest: null,
    retryStrategy: (times) => Math.min(times * 100, 1000),
  };
}

/** A producer or consumer configured with another partition count than the queues already have. */
export class PartitionCountMismatch extends Error {
  override readonly name = 'PartitionCountMismatch';
}

/**
 * Record the partition count the first process saw and refuse to run with another: a producer and
 * a consumer that disagree would route a quest to two queues and lose its order.
 */
export async function assertPartitionCount(redis: Redis, prefix: string, partitions: number): Promise<void> {
  const key = partitionsKey(prefix);
  await redis.set(key, String(partitions), 'NX');
  const stored = Number(await redis.get(key));
  if (stored !== partitions) {
    throw new PartitionCountMismatch(
      `QUEUE_PARTITIONS=${partitions} but this Redis prefix "${prefix}" is already partitioned ${stored} ways; ` +
        'drain the queues and delete the key to change it, or use the same value everywhere.',
    );
  }
}

/** Delete every key under `${prefix}:` (a test's or a bench run's queues), in SCAN-sized steps. */
export async function deleteKeysWithPrefix(redis: Redis, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length) await redis.unlink(...keys);
  } while (cursor !== '0');
}
