import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import {
  boolVar,
  ConfigError,
  databaseEnv,
  envFileEnv,
  intVar,
  optionalVar,
  parseEnv,
  poolMaxVar,
  queueEnv,
  serviceEnv,
  webhookEnv,
  z,
} from '@quest/config';
import { MIN_TTL_HEARTBEATS, POOL_DEFAULTS } from './pool/config.ts';

/** The liveness file: written by the worker, read by its container healthcheck. */
const healthFileEnv = {
  WORKER_HEALTH_FILE: optionalVar(z.string().optional()).meta({
    description:
      'Liveness file the worker rewrites after each renewal of its pool membership, and deletes on SIGTERM. ' +
      '`node apps/worker/dist/healthcheck.mjs [FILE] [--max-age-ms N]` reads it (`FILE` defaults to this) and exits 0 ' +
      'only while the renewal is younger than `WORKER_MEMBER_TTL_MS` (see [Docker](operations.md#docker)).',
    defaultText: 'unset (no file)',
    boundsText: 'a file path',
  }),
};

/**
 * Everything a worker process reads from its environment, parsed once at start-up. Each variable's
 * description is its documentation (docs/configuration.md is generated from it).
 */
export const workerEnvSchema = z.object({
  ...envFileEnv,
  ...databaseEnv,
  ...queueEnv,
  ...serviceEnv,
  ...healthFileEnv,
  ...webhookEnv,
  DATABASE_POOL_MAX: poolMaxVar(20),
  DATABASE_REQUIRE_SYNC_STANDBY: boolVar(false).meta({
    description:
      'At start-up the worker checks that the primary confirms every commit on a synchronous standby ' +
      '(`synchronous_commit` on or `remote_write`, `synchronous_standby_names` set, a standby streaming in sync in ' +
      '`pg_stat_replication`; the role needs `pg_monitor` to see it). `false`: a warning in the log when not; `true`: ' +
      'the worker refuses to start. See [High availability](high-availability.md).',
  }),
  WORKER_ID: z.string().min(1).max(100).optional().meta({
    description: 'Member name in the pool; stored on each job it processes and in its log lines.',
    defaultText: '`<hostname>-<pid>-<random>`',
    boundsText: '1–100 characters',
  }),
  WORKER_HEARTBEAT_MS: intVar(POOL_DEFAULTS.heartbeatMs, 100, 60_000).meta({
    description: 'Pool membership renewal and rebalance period.',
  }),
  WORKER_MEMBER_TTL_MS: intVar(POOL_DEFAULTS.memberTtlMs, 300, 120_000).meta({
    description: 'A member silent this long is dead: its partitions move to the others (and its healthcheck fails).',
  }),
  WORKER_LOCK_MS: intVar(POOL_DEFAULTS.lockDurationMs, 1000, 600_000).meta({
    description:
      "BullMQ job lock: a dead worker's active job is taken over after it expires (stalled jobs are looked for every " +
      'quarter of it).',
  }),
  WORKER_PROBE_TIMEOUT_MS: intVar(POOL_DEFAULTS.probeTimeoutMs, 50, 60_000).meta({
    description:
      'Deadline of the database probe the worker runs every heartbeat. Two missed in a row, or answers over 10× ' +
      "slower than the other workers' for 3 heartbeats, and the worker leaves the pool until healthy again " +
      '(see [Gray failures](operations.md#gray-failures)).',
  }),
  WORKER_STALL_RESTART_MS: intVar(POOL_DEFAULTS.stallRestartMs, 1000, 600_000).meta({
    description:
      'An owned partition with waiting jobs and none active whose consumer has fetched nothing this long gets a ' +
      'fresh consumer.',
  }),
  ALLOCATION_RETRY_BASE_MS: intVar(100, 1, 60_000).meta({
    description: 'First pause after a transient database error (it doubles with each try).',
  }),
  ALLOCATION_RETRY_MAX_MS: intVar(2000, 1, 600_000).meta({
    description: 'Longest pause between two tries; a job waits out a database outage for as long as it lasts.',
  }),
  DB_ATTEMPT_TIMEOUT_MS: intVar(10_000, 100, 600_000).meta({
    description: 'A database attempt that has not settled by then is abandoned and retried.',
  }),
  DB_IDLE_IN_TRANSACTION_TIMEOUT_MS: intVar(10_000, 0, 3_600_000).meta({
    description:
      'PostgreSQL ends a worker session idle inside a transaction this long (a frozen worker releases its quest ' +
      'locks); `0`: off.',
  }),
  DB_LOCK_TIMEOUT_MS: intVar(5_000, 0, 3_600_000).meta({
    description: 'A statement waiting longer than this for a lock gives up and is retried; `0`: off.',
  }),
  RECONCILER_INTERVAL_MS: intVar(5_000, 100, 3_600_000).meta({
    description: 'How often the reconciler runs (on one pool member at a time).',
  }),
  RECONCILER_MIN_AGE_MS: intVar(30_000, 0, 86_400_000).meta({
    description: 'Pending work untouched for this long is checked, and re-driven if no live job carries it.',
  }),
  RECONCILER_BATCH_LIMIT: intVar(500, 1, 100_000).meta({
    description: 'Most requests and most batches the reconciler checks per run.',
  }),
  BATCH_CHUNK_SIZE: intVar(5000, 1, 50_000).meta({
    description: 'Batch items per transaction (a crashed batch resumes after the last committed chunk).',
  }),
  SHUTDOWN_TIMEOUT_MS: intVar(10_000, 1000, 600_000).meta({
    description:
      'Graceful shutdown waits this long for active jobs; a job still waiting for the database is then left to ' +
      'another worker (it is re-delivered at the head of its partition).',
  }),
  EVENT_RETENTION_DAYS: intVar(30, 1, 3650).meta({
    description:
      'Events older than this are deleted (hourly), with their delivery log: `GET /events` and replays reach back this far.',
  }),
  WEBHOOK_CONCURRENCY: intVar(32, 1, 1000).meta({
    description: 'Webhook deliveries in flight at once per worker process (POSTs, over all its delivery jobs).',
  }),
  WEBHOOK_DELIVERY_BATCH: intVar(50, 1, 1000).meta({
    description:
      'Most webhook deliveries per delivery job: the job reads them in one query, decrypts each endpoint secret once, ' +
      'POSTs each event on its own and records every outcome in one statement (`1`: a job per delivery).',
  }),
  WEBHOOK_TIMEOUT_MS: intVar(10_000, 100, 60_000).meta({
    description: 'A delivery attempt not answered within this (connect, send, answer) has failed.',
  }),
  WEBHOOK_RETRY_BASE_MS: intVar(10_000, 10, 86_400_000).meta({
    description:
      'Pause after the first failed attempt of a delivery; it doubles with each failure, with jitter (half fixed, half random).',
  }),
  WEBHOOK_RETRY_MAX_MS: intVar(6 * 3_600_000, 10, 7 * 86_400_000).meta({
    description: 'Longest pause between two attempts of a delivery.',
  }),
  WEBHOOK_RETRY_WINDOW_MS: intVar(3 * 86_400_000, 1000, 30 * 86_400_000).meta({
    description:
      'A delivery still failing this long after its first attempt is given up (failed) and its endpoint marked failing (3 days: about 20 attempts).',
  }),
  WEBHOOK_QUEUE_HIGH_WATER: intVar(5000, 1, 1_000_000).meta({
    description:
      'Most webhook deliveries in Redis at once (counted as delivery jobs × `WEBHOOK_DELIVERY_BATCH`); further due deliveries ' +
      'wait in PostgreSQL, so a backlog of any size costs Redis this much.',
  }),
  WEBHOOK_PAGE_SIZE: intVar(1000, 1, 100_000).meta({
    description: 'Events the publisher numbers, and deliveries the dispatcher hands to the queue, per step.',
  }),
  WEBHOOK_POLL_MS: intVar(100, 10, 60_000).meta({
    description:
      'How often an idle worker looks for new events to publish (one index probe when there are none) — the bound on delivery lag when idle. Due deliveries (retries, replays, re-driven ones) are looked for at least once a second, and at once after a publish created deliveries.',
  }),
  METRICS_PORT: intVar(0, 0, 65_535).meta({
    description: "Port of the worker's Prometheus endpoint, `GET /metrics` (`0`: no endpoint).",
  }),
  METRICS_HOST: z
    .string()
    .min(1)
    .default('127.0.0.1')
    .meta({ description: "Address the worker's `/metrics` listens on (`0.0.0.0` in containers)." }),
});

export type WorkerConfig = z.output<typeof workerEnvSchema> & { WORKER_ID: string };

export function loadWorkerConfig(source: Record<string, string | undefined>): WorkerConfig {
  const env = parseEnv(workerEnvSchema, source);
  // A member fences itself half a heartbeat before its TTL and retries a lost renewal at once.
  const minTtl = MIN_TTL_HEARTBEATS * env.WORKER_HEARTBEAT_MS;
  if (env.WORKER_MEMBER_TTL_MS < minTtl) {
    throw new ConfigError(
      `Invalid configuration:\n  WORKER_MEMBER_TTL_MS: must be at least ${MIN_TTL_HEARTBEATS} × WORKER_HEARTBEAT_MS (${minTtl}) (got ${env.WORKER_MEMBER_TTL_MS})`,
    );
  }
  return { ...env, WORKER_ID: env.WORKER_ID ?? `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}` };
}

/** What the container healthcheck (healthcheck.ts) reads: the worker's liveness file, from the same environment. */
export const healthcheckEnvSchema = z.object({ ...envFileEnv, ...healthFileEnv });

export type HealthcheckConfig = z.output<typeof healthcheckEnvSchema>;

export function loadHealthcheckConfig(source: Record<string, string | undefined>): HealthcheckConfig {
  return parseEnv(healthcheckEnvSchema, source);
}
