import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { partitionsKey } from './names.ts';

/**
 * Connections to Redis, standalone or a Redis Cluster. A cluster is addressed as
 * `redis-cluster://host:port,host:port,…` (what the config makes of REDIS_CLUSTER_NODES); every
 * connection of the service is made here, so the rest of the code passes one string around and
 * never knows which it talks to. On a cluster each connection is an ioredis `Cluster` (typed as
 * `Redis` below: it has the same commands, and BullMQ takes either); the key layout (names.ts)
 * keeps every multi-key command within one slot.
 */

export const CLUSTER_SCHEME = 'redis-cluster:';

export function isClusterUrl(url: string): boolean {
  return url.startsWith(`${CLUSTER_SCHEME}//`);
}

/** `redis-cluster://[user:pass@]h1:p1,h2:p2` → its seed nodes and credentials. */
export function parseClusterUrl(url: string): {
  nodes: { host: string; port: number }[];
  username?: string;
  password?: string;
  tls: boolean;
} {
  const rest = url.slice(`${CLUSTER_SCHEME}//`.length);
  const at = rest.lastIndexOf('@');
  const auth = at >= 0 ? rest.slice(0, at) : '';
  const hosts = (at >= 0 ? rest.slice(at + 1) : rest).replace(/\/.*$/, '').replace(/\?.*$/, '');
  const [user, pass] = auth.includes(':') ? auth.split(/:(.*)/s) : ['', auth];
  const nodes = hosts
    .split(',')
    .filter(Boolean)
    .map((hp) => {
      const m = /^\[?([^\]]+?)\]?:(\d+)$/.exec(hp.trim());
      if (!m) throw new Error(`bad cluster node "${hp}" (expected host:port)`);
      return { host: m[1]!, port: Number(m[2]) };
    });
  if (!nodes.length) throw new Error('a Redis Cluster needs at least one node');
  return {
    nodes,
    ...(user ? { username: decodeURIComponent(user) } : {}),
    ...(pass ? { password: decodeURIComponent(pass) } : {}),
    tls: /[?&]tls=(1|true)\b/.test(url),
  };
}

/** Options that belong to the cluster client rather than to each node's connection. */
const CLUSTER_LEVEL = new Set(['enableOfflineQueue', 'enableReadyCheck', 'retryStrategy', 'lazyConnect']);

/**
 * A connection to `url` with `overrides` (ioredis options). On a cluster: BullMQ's cluster
 * guidance — ready check on, offline queue as asked, redirections and failover retried — and the
 * per-node options (timeouts, retries per request, credentials) for every node.
 */
export function redisConnection(url: string, overrides: RedisOptions = {}): Redis {
  if (!isClusterUrl(url)) return new Redis({ ...consumerConnectionOptions(url), ...overrides });
  const { nodes, username, password, tls } = parseClusterUrl(url);
  const nodeOptions: RedisOptions = {
    maxRetriesPerRequest: null,
    ...(username ? { username } : {}),
    ...(password ? { password } : {}),
    ...(tls ? { tls: {} } : {}),
  };
  for (const [k, v] of Object.entries(overrides)) if (!CLUSTER_LEVEL.has(k)) (nodeOptions as Record<string, unknown>)[k] = v;
  const retry = overrides.retryStrategy ?? ((times: number) => Math.min(times * 100, 1000));
  return new Cluster(nodes, {
    redisOptions: nodeOptions,
    enableReadyCheck: true,
    enableOfflineQueue: overrides.enableOfflineQueue ?? true,
    lazyConnect: overrides.lazyConnect ?? false,
    clusterRetryStrategy: (times) => retry(times) ?? null,
    retryDelayOnFailover: 200,
    retryDelayOnClusterDown: 300,
    retryDelayOnTryAgain: 100,
    maxRedirections: 16,
    slotsRefreshTimeout: 2000,
  }) as unknown as Redis;
}

/**
 * Another connection to the server(s) `redis` talks to, with its options and `overrides`
 * (per-node ioredis options, e.g. a command timeout): what a class given a connection makes of it
 * when it needs one of its own, as BullMQ does for its blocking reads.
 */
export function duplicateConnection(redis: Redis, overrides: RedisOptions = {}): Redis {
  const client: unknown = redis;
  if (!(client instanceof Cluster)) return redis.duplicate(overrides);
  const redisOptions = { ...client.options.redisOptions, ...overrides };
  return client.duplicate([], { redisOptions }) as unknown as Redis;
}

/**
 * Producers fail fast: no offline queue and a command timeout, so a POST answers 503 within a
 * second when Redis is down or hung instead of hanging. Consumers (workers, event listeners) wait
 * and reconnect forever (`maxRetriesPerRequest: null`, as BullMQ requires for blocking commands).
 */
export function producerConnection(url: string, commandTimeoutMs = 1000): Redis {
  return redisConnection(url, {
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    commandTimeout: commandTimeoutMs,
    connectTimeout: 1000,
    retryStrategy: (times) => Math.min(times * 100, 1000),
  });
}

/** ioredis options that a URL's query may carry as numbers (`?family=6&connectTimeout=2000`). */
const NUMERIC_URL_OPTIONS = new Set(['family', 'db', 'connectTimeout', 'commandTimeout', 'keepAlive']);

/**
 * Options for a standalone consumer connection to `url` (a cluster needs redisConnection): host,
 * port, credentials, the database index (`/7`, or `?db=7`) and the options of its query, as
 * ioredis reads a URL itself.
 */
export function consumerConnectionOptions(url: string): RedisOptions {
  if (isClusterUrl(url)) throw new Error('consumerConnectionOptions: a Redis Cluster needs redisConnection()');
  const u = new URL(url);
  const fromQuery: Record<string, string | number> = {};
  for (const [k, v] of u.searchParams) fromQuery[k] = NUMERIC_URL_OPTIONS.has(k) && /^\d+$/.test(v) ? Number(v) : v;
  return {
    ...fromQuery,
    host: u.hostname.replace(/^\[|\]$/g, ''),
    port: Number(u.port || 6379),
    username: u.username ? decodeURIComponent(u.username) : undefined,
    password: u.password ? decodeURIComponent(u.password) : undefined,
    db: u.pathname && u.pathname !== '/' ? Number(u.pathname.slice(1)) : Number(fromQuery.db ?? 0),
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

/** The masters of a cluster connection, or the connection itself when standalone. */
export function masterConnections(redis: Redis): Redis[] {
  const client: unknown = redis;
  return client instanceof Cluster ? client.nodes('master') : [redis];
}

/** Delete every key under `${prefix}:` (a test's or a bench run's queues), in SCAN-sized steps, on every master. */
export async function deleteKeysWithPrefix(redis: Redis, prefix: string): Promise<void> {
  const cluster = (redis as unknown) instanceof Cluster;
  for (const node of masterConnections(redis)) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      cursor = next;
      // On a cluster the keys of one SCAN page span many slots: one key per command there.
      if (keys.length && cluster) await Promise.all(keys.map((k) => node.unlink(k)));
      else if (keys.length) await node.unlink(...keys);
    } while (cursor !== '0');
  }
}
