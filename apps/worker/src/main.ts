import { pino } from 'pino';
import { ConfigError, loadEnvironment, parseSecretKey } from '@quest/config';
import {
  createSql,
  endDepartedWorkerTransactions,
  readReplicationState,
  synchronousReplicationProblems,
  workerApplicationName,
} from '@quest/db';
import { DatabaseConfigurationError, migrate, waitForDatabase } from '@quest/db/migrate';
import { DeliveryQueue, producerConnection, ReplySender, redisConnection } from '@quest/queue';
import { loadWorkerConfig } from './env.ts';
import { removeHealthFile, writeHealthFile } from './health.ts';
import { observePool, sampleDbPool, sampleWebhooks, serveMetrics } from './metrics.ts';
import { createHandlers } from './handlers/index.ts';
import { PartitionPool, type PoolBeat } from './pool/index.ts';
import { Reconciler } from './reconciler.ts';
import { deliverGroup, Limiter, SignerCache } from './webhooks/deliver.ts';
import { OutboxPump } from './webhooks/pump.ts';
import { startDeliveryWorker } from './webhooks/worker.ts';

let config: ReturnType<typeof loadWorkerConfig>;
let envFile: string | null = null;
try {
  // The real environment, with a `.env` file filling in what it leaves unset (see @quest/config).
  const loaded = loadEnvironment(process.env);
  envFile = loaded.file;
  config = loadWorkerConfig(loaded.env);
} catch (error) {
  console.error(error instanceof ConfigError ? error.message : String(error));
  process.exit(1);
}

const logger = pino({ level: config.LOG_LEVEL, base: { app: 'worker', workerId: config.WORKER_ID } });
if (envFile) logger.info({ envFile }, 'read environment file');

// A rejection nobody handled (a dependency's background promise) is logged, not fatal: the
// process's own work is supervised by its retries, the pool's heartbeat and the reconciler.
process.on('unhandledRejection', (err) => logger.error({ err }, 'unhandled rejection'));

// Join the pool only once PostgreSQL answers with the expected schema: an outage is waited out; a
// wrong DATABASE_URL (missing database, bad credentials) stops the process with one line. The
// worker never creates the database (npm start and the compose file migrate first).
try {
  await waitForDatabase(config.DATABASE_URL, { logger });
  await migrate(config.DATABASE_URL, { createDatabase: false, logger });
} catch (error) {
  if (error instanceof DatabaseConfigurationError) {
    logger.fatal(error.message);
    console.error(`quest-worker: ${error.message}`);
    process.exit(1);
  }
  throw error;
}
const sql = createSql(config.DATABASE_URL, {
  max: config.DATABASE_POOL_MAX,
  applicationName: workerApplicationName(config.WORKER_ID),
  idleInTransactionTimeoutMs: config.DB_IDLE_IN_TRANSACTION_TIMEOUT_MS,
  lockTimeoutMs: config.DB_LOCK_TIMEOUT_MS,
});
const probeSql = createSql(config.DATABASE_URL, { max: 1, applicationName: workerApplicationName(config.WORKER_ID) });
// A 200 means a payout is on two machines only when the primary waits for a synchronous standby.
const replicationProblems = await readReplicationState(sql).then(synchronousReplicationProblems, (err: Error) => [
  `the replication check failed: ${err.message}`,
]);
if (replicationProblems.length > 0) {
  const msg = 'PostgreSQL primary without a synchronous standby: an acknowledged credit is lost with the primary';
  if (config.DATABASE_REQUIRE_SYNC_STANDBY) {
    logger.fatal({ problems: replicationProblems }, `${msg}; refusing to start (DATABASE_REQUIRE_SYNC_STANDBY=true)`);
    console.error(`quest-worker: ${msg}: ${replicationProblems.join('; ')} (DATABASE_REQUIRE_SYNC_STANDBY=true)`);
    process.exit(1);
  }
  logger.warn({ problems: replicationProblems }, msg);
} else {
  logger.info('PostgreSQL primary confirms every commit on a synchronous standby');
}
// Replies to the API processes: fail fast (no offline queue), they are advisory.
const replyRedis = producerConnection(config.REDIS_URL);
replyRedis.on('error', () => {});
const replies = new ReplySender(replyRedis, config.QUEUE_PREFIX);
// The consumers' connection (waits for Redis, never times out): the partition pool, the webhook
// delivery queue and worker, and the reconciler run on it and on duplicates of it.
const queueRedis = redisConnection(config.REDIS_URL);
queueRedis.on('error', () => {});
const pool = new PartitionPool({
  connection: queueRedis,
  prefix: config.QUEUE_PREFIX,
  partitions: config.QUEUE_PARTITIONS,
  memberId: config.WORKER_ID,
  timing: {
    heartbeatMs: config.WORKER_HEARTBEAT_MS,
    memberTtlMs: config.WORKER_MEMBER_TTL_MS,
    lockDurationMs: config.WORKER_LOCK_MS,
    probeTimeoutMs: config.WORKER_PROBE_TIMEOUT_MS,
    stallRestartMs: config.WORKER_STALL_RESTART_MS,
  },
  logger,
  // The worker's own path to PostgreSQL, on a connection of its own so it measures the path, not
  // the pool's queue: a member is one that can do the work.
  probe: async () => {
    await probeSql`select 1`;
  },
  onHeartbeat: config.WORKER_HEALTH_FILE ? writeLiveness(config.WORKER_HEALTH_FILE) : undefined,
  // A member gone (dead, fenced, or withdrawn) may still hold a quest's row lock in an open
  // transaction: end it now rather than let the next owner wait for the idle-in-transaction timeout.
  onMembersChanged: (members) => {
    endDepartedWorkerTransactions(sql, members).then(
      (ended) => {
        if (ended.length) logger.warn({ sessions: ended }, "ended departed workers' open transactions");
      },
      (err: unknown) => logger.warn({ err }, "could not end departed workers' transactions"),
    );
  },
  replies,
  handlers: createHandlers({
    sql,
    workerId: config.WORKER_ID,
    retryBaseMs: config.ALLOCATION_RETRY_BASE_MS,
    retryMaxMs: config.ALLOCATION_RETRY_MAX_MS,
    attemptTimeoutMs: config.DB_ATTEMPT_TIMEOUT_MS,
    batchChunkSize: config.BATCH_CHUNK_SIZE,
    logger,
  }),
});
/** The healthcheck's evidence that this worker is still a live pool member (see health.ts). */
function writeLiveness(file: string) {
  let failing = false;
  return (beat: PoolBeat) => {
    try {
      writeHealthFile(file, {
        memberId: config.WORKER_ID,
        pid: process.pid,
        renewedAt: beat.at.toISOString(),
        memberTtlMs: config.WORKER_MEMBER_TTL_MS,
        members: beat.members,
        partitions: beat.owned,
        ...(beat.member ? {} : { out: beat.reason ?? 'left the pool' }),
      });
      failing = false;
    } catch (err) {
      // Logged once per streak: the healthcheck turns unhealthy on its own.
      if (!failing) logger.error({ err, file }, 'cannot write the liveness file');
      failing = true;
    }
  };
}
await pool.start();
observePool(pool, config.WORKER_ID);
const metricsServer = config.METRICS_PORT ? await serveMetrics(config.METRICS_HOST, config.METRICS_PORT) : undefined;
if (metricsServer) logger.info({ port: config.METRICS_PORT, host: config.METRICS_HOST }, 'metrics listening');
// Events and webhooks (docs/events.md): the outbox pump feeds the delivery queue; every worker
// delivers, on a queue of its own, apart from the partitions.
const deliveryQueue = new DeliveryQueue(queueRedis, config.QUEUE_PREFIX);
const pump = new OutboxPump({
  sql,
  queue: deliveryQueue,
  pageSize: config.WEBHOOK_PAGE_SIZE,
  groupSize: config.WEBHOOK_DELIVERY_BATCH,
  highWater: config.WEBHOOK_QUEUE_HIGH_WATER,
  idleMs: config.WEBHOOK_POLL_MS,
  retentionDays: config.EVENT_RETENTION_DAYS,
  jobRetentionSeconds: config.JOB_RETENTION_SECONDS,
  logger,
});
pump.start();
// A job is a group of up to WEBHOOK_DELIVERY_BATCH deliveries, POSTed WEBHOOK_CONCURRENCY at a
// time over all jobs of the process; a few jobs run at once, so one waiting for its slowest
// receiver (or recording its outcomes) does not leave the others idle.
const webhookLimiter = new Limiter(config.WEBHOOK_CONCURRENCY);
const webhookSigners = new SignerCache();
const deliverDeps = {
  sql,
  secretKey: config.WEBHOOK_SECRET_KEY ? parseSecretKey(config.WEBHOOK_SECRET_KEY) : null,
  schedule: {
    baseMs: config.WEBHOOK_RETRY_BASE_MS,
    maxMs: config.WEBHOOK_RETRY_MAX_MS,
    windowMs: config.WEBHOOK_RETRY_WINDOW_MS,
  },
  send: {
    allowPrivate: config.WEBHOOK_ALLOW_PRIVATE_URLS,
    timeoutMs: config.WEBHOOK_TIMEOUT_MS,
    maxBodyBytes: 64 * 1024,
  },
  logger,
  concurrency: config.WEBHOOK_CONCURRENCY,
  limiter: webhookLimiter,
  signers: webhookSigners,
};
const deliveryWorker = startDeliveryWorker({
  connection: queueRedis,
  prefix: config.QUEUE_PREFIX,
  concurrency: Math.max(2, Math.ceil(config.WEBHOOK_CONCURRENCY / config.WEBHOOK_DELIVERY_BATCH) + 1),
  lockDurationMs: config.WEBHOOK_TIMEOUT_MS * 3,
  name: config.WORKER_ID,
  logger,
  process: async (job) => {
    await deliverGroup(deliverDeps, job);
  },
});
const sample = () => {
  void sampleDbPool(sql, config.DATABASE_POOL_MAX).catch(() => {});
  void sampleWebhooks(sql, () => deliveryQueue.depth()).catch(() => {});
};
const dbSampler =
  config.METRICS_PORT && config.METRICS_SAMPLE_MS ? setInterval(sample, config.METRICS_SAMPLE_MS).unref() : undefined;
if (dbSampler) sample();
const reconciler = new Reconciler({
  sql,
  connection: queueRedis,
  prefix: config.QUEUE_PREFIX,
  partitions: config.QUEUE_PARTITIONS,
  memberId: config.WORKER_ID,
  intervalMs: config.RECONCILER_INTERVAL_MS,
  minAgeMs: config.RECONCILER_MIN_AGE_MS,
  limit: config.RECONCILER_BATCH_LIMIT,
  retentionSeconds: config.JOB_RETENTION_SECONDS,
  deliveryQueue,
  logger,
});
reconciler.start();
logger.info({ partitions: config.QUEUE_PARTITIONS, prefix: config.QUEUE_PREFIX }, 'worker started');

let shuttingDown = false;
async function shutdown(signal: string) {
  if (shuttingDown) return;
  shuttingDown = true;
  logger.info({ signal }, 'shutting down: finishing active jobs');
  // Whatever is down, stop within SHUTDOWN_TIMEOUT_MS. A job still waiting for the database then
  // stays active in Redis: once its lock expires, BullMQ hands it to another worker, at the head of
  // its partition, and the ledger replays whatever it had committed.
  const deadline = new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), config.SHUTDOWN_TIMEOUT_MS).unref());
  try {
    clearInterval(dbSampler);
    metricsServer?.close();
    await reconciler.stop();
    await pump.stop();
    // Leaving the pool: no longer healthy, whatever the active jobs still do.
    if (config.WORKER_HEALTH_FILE) removeHealthFile(config.WORKER_HEALTH_FILE);
    const closed = await Promise.race([pool.close().then(() => 'closed' as const), deadline]);
    if (closed === 'timeout') logger.warn('active jobs did not finish in time; leaving them to another worker');
    // An attempt cut short is recorded by nobody: the reconciler hands it over again.
    await Promise.race([deliveryWorker.close(), deadline]);
    await deliveryQueue.close().catch(() => {});
    queueRedis.disconnect();
    replyRedis.disconnect();
    await Promise.all([sql.end({ timeout: 1 }), probeSql.end({ timeout: 1 })]);
    logger.info('stopped');
    process.exit(0);
  } catch (error) {
    logger.error({ err: error }, 'shutdown failed');
    process.exit(1);
  }
}
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));
