import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import postgres from 'postgres';
import { createSql, type Sql } from '@quest/db';
import { migrate } from '@quest/db/migrate';
import { withDatabase } from '@quest/config/urls';
import { deleteKeysWithPrefix } from '@quest/queue';

/**
 * Shared integration-test fixtures. Tests talk to real servers: TEST_DATABASE_URL / TEST_REDIS_URL
 * (defaulting to the local 127.0.0.1 servers). When neither is set, none answers on the default
 * port and a Docker engine is present, the servers are started with testcontainers instead.
 * Each test file gets its own database and its own Redis key prefix, so files run in parallel
 * and repeat without manual cleanup.
 */

const DEFAULT_PG = 'postgres://postgres@127.0.0.1:5432/postgres';
const DEFAULT_REDIS = 'redis://127.0.0.1:6379';

interface Servers {
  postgresUrl: string;
  redisUrl: string;
}

let serversPromise: Promise<Servers> | undefined;

async function reachable(url: string, kind: 'pg' | 'redis'): Promise<boolean> {
  if (kind === 'pg') {
    const sql = postgres(url, { max: 1, connect_timeout: 2, onnotice: () => {} });
    try {
      await sql`select 1`;
      return true;
    } catch {
      return false;
    } finally {
      await sql.end({ timeout: 1 });
    }
  }
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 2000, retryStrategy: () => null });
  try {
    await redis.connect();
    await redis.ping();
    return true;
  } catch {
    return false;
  } finally {
    redis.disconnect();
  }
}

async function startContainers(): Promise<Servers> {
  // Loaded only when needed: CI and this machine have no Docker engine.
  const { PostgreSqlContainer } = await import('@testcontainers/postgresql');
  const { RedisContainer } = await import('@testcontainers/redis');
  const [pg, redis] = await Promise.all([
    new PostgreSqlContainer('postgres:16-alpine').withUsername('postgres').withPassword('postgres').start(),
    new RedisContainer('redis:7-alpine').start(),
  ]);
  return { postgresUrl: withDatabase(pg.getConnectionUri(), 'postgres'), redisUrl: redis.getConnectionUrl() };
}

export function testServers(): Promise<Servers> {
  serversPromise ??= (async () => {
    const pgEnv = process.env.TEST_DATABASE_URL;
    const redisEnv = process.env.TEST_REDIS_URL;
    if (pgEnv || redisEnv) return { postgresUrl: pgEnv ?? DEFAULT_PG, redisUrl: redisEnv ?? DEFAULT_REDIS };
    const [pgUp, redisUp] = await Promise.all([reachable(DEFAULT_PG, 'pg'), reachable(DEFAULT_REDIS, 'redis')]);
    if (pgUp && redisUp) return { postgresUrl: DEFAULT_PG, redisUrl: DEFAULT_REDIS };
    const { existsSync } = await import('node:fs');
    if (existsSync('/var/run/docker.sock') || process.env.DOCKER_HOST) return startContainers();
    throw new Error(
      'Integration tests need PostgreSQL and Redis: set TEST_DATABASE_URL / TEST_REDIS_URL, start them on 127.0.0.1:5432 / :6379, or run a Docker engine.',
    );
  })();
  return serversPromise;
}

export function uniqueName(prefix: string): string {
  return `${prefix}_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
}

/** `url` (a PostgreSQL server URL) with database `name`: credentials, hosts and options kept. */
export { withDatabase } from '@quest/config/urls';

export interface TestDatabase {
  url: string;
  name: string;
  sql: Sql;
  drop(): Promise<void>;
}

/** A fresh, migrated database of its own. `drop()` closes the pool and drops the database. */
export async function createTestDatabase(opts: { migrate?: boolean; max?: number } = {}): Promise<TestDatabase> {
  const { postgresUrl } = await testServers();
  const name = uniqueName('qr_test');
  const url = withDatabase(postgresUrl, name);
  if (opts.migrate === false) {
    const admin = postgres(postgresUrl, { max: 1, onnotice: () => {} });
    await admin.unsafe(`create database "${name}"`);
    await admin.end();
  } else {
    await migrate(url);
  }
  const sql = createSql(url, { max: opts.max ?? 10, applicationName: 'quest-rewards-test' });
  return {
    url,
    name,
    sql,
    async drop() {
      await sql.end({ timeout: 5 });
      await dropDatabase(postgresUrl, name);
    },
  };
}

/** Drop database `name` (its sessions ended by force), connected to the server at `serverUrl`. */
export async function dropDatabase(serverUrl: string, name: string): Promise<void> {
  const admin = postgres(serverUrl, { max: 1, onnotice: () => {}, connect_timeout: 5 });
  try {
    await admin.unsafe(`drop database if exists "${name}" with (force)`);
  } finally {
    await admin.end({ timeout: 2 }).catch(() => {});
  }
}

export interface TestRedis {
  url: string;
  prefix: string;
  /** Delete every key under the prefix. */
  cleanup(): Promise<void>;
}

export async function createTestRedis(): Promise<TestRedis> {
  const { redisUrl } = await testServers();
  const prefix = uniqueName('qrt');
  return {
    url: redisUrl,
    prefix,
    async cleanup() {
      const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
      try {
        await deleteKeysWithPrefix(redis, prefix);
      } finally {
        redis.disconnect();
      }
    },
  };
}
