import { pino } from 'pino';
import { ConfigError } from '@quest/config';
import { createSql } from '@quest/db';
import { migrate } from '@quest/db/migrate';
import { PartitionPool } from '@quest/queue';
import { loadWorkerConfig } from './env.ts';
import { createProcessor } from './processor.ts';

let config: ReturnType<typeof loadWorkerConfig>;
try {
  config = loadWorkerConfig(process.env);
} catch (error) {
  console.error(error instanceof ConfigError ? error.message : String(error));
  process.exit(1);
}

const logger = pino({ level: config.LOG_LEVEL, base: { app: 'worker', workerId: config.WORKER_ID } });

await migrate(config.DATABASE_URL);
const sql = createSql(config.DATABASE_URL, {
  max: config.DATABASE_POOL_MAX,
  applicationName: `quest-worker ${config.WORKER_ID}`,
});
const pool = new PartitionPool({
  redisUrl: config.REDIS_URL,
  prefix: config.QUEUE_PREFIX,
  partitions: config.QUEUE_PARTITIONS,
  memberId: config.WORKER_ID,
  heartbeatMs: config.WORKER_HEARTBEAT_MS,
  memberTtlMs: config.WORKER_MEMBER_TTL_MS,
  lockDurationMs: config.WORKER_LOCK_MS,
  stalledIntervalMs: config.WORKER_STALLED_INTERVAL_MS,
  logger,
  processor: createProcessor({
    sql,
    workerId: config.WORKER_ID,
    maxAttempts: config.ALLOCATION_MAX_ATTEMPTS,
    retryBaseMs: config.ALLOCATION_RETRY_BASE_MS,
    batchChunkSize: config.BATCH_CHUNK_SIZE,
    logger,
  }),
});
await pool.start();
logger.info({ partitions: config.QUEUE_PARTITIONS, prefix: config.QUEUE_PREFIX }, 'worker started');

let shuttingDown = false;
async function shutdown(signal: string) {
  if (shuttingDown) return;
  shuttingDown = true;
  logger.info({ signal }, 'shutting down: finishing active jobs');
  const timer = setTimeout(() => {
    logger.error('shutdown timed out');
    process.exit(1);
  }, config.SHUTDOWN_TIMEOUT_MS);
  timer.unref();
  try {
    await pool.close();
    await sql.end({ timeout: 5 });
    logger.info('stopped');
    process.exit(0);
  } catch (error) {
    logger.error({ err: error }, 'shutdown failed');
    process.exit(1);
  }
}
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));
