import { hostname } from 'node:os';
import { ConfigError, loadEnvironment } from '@quest/config';
import { createSql } from '@quest/db';
import { migrate } from '@quest/db/migrate';
import { createAllocator, redisConnection } from '@quest/queue';
import { buildApp } from './app.ts';
import { QuestAuthorizer } from './auth.ts';
import { type ApiConfig, loadApiConfig } from './env.ts';
import { FeatureFlagCache } from './flags.ts';
import { READ_ROUTING_INTERVAL_MS, ReadRouter } from './read-routing.ts';
import { IdempotencyGuard } from './services/idempotency.ts';
import { createLogger } from './logger.ts';

let config: ApiConfig;
let envFile: string | null = null;
try {
  // The real environment, with a `.env` file filling in what it leaves unset (see @quest/config).
  const loaded = loadEnvironment(process.env);
  envFile = loaded.file;
  config = loadApiConfig(loaded.env);
} catch (error) {
  console.error(error instanceof ConfigError ? error.message : error);
  process.exit(1);
}

const logger = createLogger(config.LOG_LEVEL);
if (envFile) logger.info({ envFile }, 'read environment file');
// A rejection nobody handled (a dependency's background promise, e.g. the queue library's on a
// Redis that died mid-command) is logged, not fatal: requests still answer 503 on their own.
process.on('unhandledRejection', (err) => logger.error({ err }, 'unhandled rejection'));
try {
  await migrate(config.DATABASE_URL, { logger });
  const sql = createSql(config.DATABASE_URL, {
    max: config.DATABASE_POOL_MAX,
    applicationName: `quest-api ${hostname()}-${process.pid}`,
    statementTimeoutMs: config.DB_STATEMENT_TIMEOUT_MS,
  });
  // Public reads on standbys, within a staleness bound (docs/high-availability.md#read-routing).
  const readSql = config.DATABASE_READ_URL
    ? createSql(config.DATABASE_READ_URL, {
        max: config.DATABASE_POOL_MAX,
        applicationName: `quest-api-read ${hostname()}-${process.pid}`,
        statementTimeoutMs: config.DB_STATEMENT_TIMEOUT_MS,
      })
    : undefined;
  const reads = readSql
    ? new ReadRouter(sql, readSql, { maxLagMs: config.DATABASE_READ_MAX_LAG_MS, intervalMs: READ_ROUTING_INTERVAL_MS, logger })
    : undefined;
  await reads?.start();
  const flags = await FeatureFlagCache.start(sql, { logger });
  const auth = await QuestAuthorizer.start(sql, { ttlMs: config.AUTH_CACHE_TTL_MS, logger });
  const allocator = await createAllocator({
    redisUrl: config.REDIS_URL,
    prefix: config.QUEUE_PREFIX,
    partitions: config.QUEUE_PARTITIONS,
    waitMs: config.ALLOCATION_WAIT_MS,
    maxItemsPerJob: config.COALESCE_MAX_ITEMS,
    retentionSeconds: Math.max(config.JOB_RETENTION_SECONDS, Math.ceil((2 * config.BATCH_WAIT_MS) / 1000)),
  });
  logger.info({ replyKey: allocator.replyKey }, 'reply stream');
  // The API's own Redis connection (the queue's are the allocator's): the Idempotency-Key guard
  // and the rate limits shared by every API process.
  // Fails fast instead of queueing while Redis is away: limits then fail open and the guard
  // answers 503 QUEUE_UNAVAILABLE at once (the queue is down too), and reads keep working.
  const redis = redisConnection(config.REDIS_URL, {
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    commandTimeout: 500,
    lazyConnect: true,
  });
  redis.on('error', (err) => logger.warn({ err }, 'redis connection error (idempotency guard)'));
  await redis.connect();
  const idempotency = new IdempotencyGuard(redis, { prefix: config.QUEUE_PREFIX, ttlMs: config.IDEMPOTENCY_GUARD_TTL_MS });
  const app = await buildApp(config, { sql, reads, flags, allocator, auth, logger, idempotency, redis });
  await app.listen({ host: config.HOST, port: config.PORT });

  // Stop taking requests, let in-flight ones finish (they may be waiting on an allocation), then close the pools.
  const shutdown = async (signal: string) => {
    logger.info({ signal }, 'shutting down');
    setTimeout(() => {
      logger.error('shutdown timed out');
      process.exit(1);
    }, config.ALLOCATION_WAIT_MS + 10_000).unref();
    // close() drops only the keep-alive sockets idle at that instant; sockets whose request is still
    // being answered become idle later and would hold the process open until the client's keep-alive
    // runs out. Sweep them as they go idle, so in-flight requests finish and nothing lingers.
    const sweep = setInterval(() => app.server.closeIdleConnections(), 50);
    flags.stop();
    await app.close();
    clearInterval(sweep);
    // Each step is bounded, so a Redis or PostgreSQL that is gone cannot hold the process.
    await allocator.close();
    redis.disconnect();
    await Promise.race([auth.stop(), new Promise((r) => setTimeout(r, 1000).unref())]);
    reads?.stop();
    await Promise.all([sql.end({ timeout: 1 }), readSql?.end({ timeout: 1 })]);
    logger.info('stopped');
  };
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => {
      shutdown(signal).then(
        () => process.exit(0),
        (err) => {
          logger.error({ err }, 'shutdown failed');
          process.exit(1);
        },
      );
    });
  }
} catch (err) {
  logger.fatal({ err }, 'start-up failed');
  process.exit(1);
}
