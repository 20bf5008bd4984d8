import type { Redis } from 'ioredis';
import { createSql, type Sql } from '@quest/db';
import { migrate } from '@quest/db/migrate';
import { deleteKeysWithPrefix, redisConnection } from '@quest/queue';
import { dropDatabase, withDatabase } from '@quest/testing/servers';

export interface BenchInfra {
  /** Server URL (maintenance database `postgres`). */
  serverUrl: string;
  dbName: string;
  databaseUrl: string;
  redisUrl: string;
  prefix: string;
  /** Small pool for seeding and audits. */
  sql: Sql;
  redis: Redis;
  /** Run `fn` on cleanup() too, before the bench's own database and keys go (a peer's database and prefix). */
  alsoCleanUp(fn: () => Promise<void>): void;
  cleanup(): Promise<void>;
}

/**
 * A fresh database `qr_bench_<ts>` (migrated with the project's own migrate()) and a fresh Redis
 * key prefix. cleanup() drops the database (force) and unlinks every key under the prefix; it is
 * idempotent and safe to call from a signal handler.
 */
export async function createInfra(opts: { pgUrl: string; redisUrl: string; tag: string }): Promise<BenchInfra> {
  const dbName = `qr_bench_${opts.tag}`;
  const prefix = `qrb_${opts.tag}`;
  const databaseUrl = withDatabase(opts.pgUrl, dbName);
  const redis = redisConnection(opts.redisUrl, { maxRetriesPerRequest: 1, lazyConnect: true });
  redis.on('error', () => {});
  let cleaned: Promise<void> | undefined;
  let sql: Sql | undefined;
  const extra: (() => Promise<void>)[] = [];
  const alsoCleanUp = (fn: () => Promise<void>) => {
    extra.push(fn);
  };
  const cleanup = () =>
    (cleaned ??= (async () => {
      for (const fn of extra) await fn().catch((error) => console.error(`bench: cleanup: ${(error as Error).message}`));
      await sql?.end({ timeout: 2 }).catch(() => {});
      try {
        await dropDatabase(withDatabase(opts.pgUrl, 'postgres'), dbName);
      } catch (error) {
        console.error(`bench: could not drop database ${dbName}: ${(error as Error).message}`);
      }
      try {
        if (redis.status !== 'ready') await redis.connect().catch(() => {});
        await deleteKeysWithPrefix(redis, prefix);
      } catch (error) {
        console.error(`bench: could not clean Redis prefix ${prefix}: ${(error as Error).message}`);
      } finally {
        redis.disconnect();
      }
    })());
  try {
    await redis.connect();
    await redis.ping();
    await migrate(databaseUrl);
    sql = createSql(databaseUrl, { max: 4, applicationName: 'quest-bench' });
    return { serverUrl: opts.pgUrl, dbName, databaseUrl, redisUrl: opts.redisUrl, prefix, sql, redis, alsoCleanUp, cleanup };
  } catch (error) {
    await cleanup();
    throw error;
  }
}
