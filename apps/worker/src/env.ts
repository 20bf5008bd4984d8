import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { databaseEnv, intVar, parseEnv, queueEnv, z } from '@quest/config';

const schema = z.object({
  ...databaseEnv,
  ...queueEnv,
  DATABASE_POOL_MAX: intVar(20, 1, 500),
  WORKER_ID: z.string().min(1).max(100).optional(),
  WORKER_HEARTBEAT_MS: intVar(1000, 100, 60_000),
  WORKER_MEMBER_TTL_MS: intVar(3000, 300, 120_000),
  WORKER_LOCK_MS: intVar(4000, 1000, 600_000),
  WORKER_STALLED_INTERVAL_MS: intVar(2000, 500, 600_000),
  ALLOCATION_RETRY_BASE_MS: intVar(100, 1, 60_000),
  ALLOCATION_RETRY_MAX_MS: intVar(2000, 1, 600_000),
  DB_ATTEMPT_TIMEOUT_MS: intVar(10_000, 100, 600_000),
  DB_IDLE_IN_TRANSACTION_TIMEOUT_MS: intVar(10_000, 0, 3_600_000),
  DB_LOCK_TIMEOUT_MS: intVar(5_000, 0, 3_600_000),
  RECONCILER_INTERVAL_MS: intVar(5_000, 100, 3_600_000),
  RECONCILER_MIN_AGE_MS: intVar(30_000, 0, 86_400_000),
  RECONCILER_BATCH_LIMIT: intVar(500, 1, 100_000),
  JOB_RETENTION_SECONDS: intVar(60, 1, 86_400),
  BATCH_CHUNK_SIZE: intVar(5000, 1, 50_000),
  SHUTDOWN_TIMEOUT_MS: intVar(10_000, 1000, 600_000),
  /** Port of the worker's Prometheus endpoint, GET /metrics (0: no endpoint). */
  METRICS_PORT: intVar(0, 0, 65_535),
  METRICS_HOST: z.string().min(1).default('127.0.0.1'),
  /**
   * Liveness file rewritten after each renewal of the pool membership, read by the container
   * healthcheck (healthcheck.ts). Unset: no file.
   */
  WORKER_HEALTH_FILE: z.preprocess((v) => (v === '' ? undefined : v), z.string().optional()),
  /** How often the database-session gauge is sampled (0: never). */
  METRICS_SAMPLE_MS: intVar(5000, 0, 3_600_000),
});

export type WorkerConfig = z.output<typeof schema> & { WORKER_ID: string };

export function loadWorkerConfig(source: Record<string, string | undefined>): WorkerConfig {
  const env = parseEnv(schema, source);
  return { ...env, WORKER_ID: env.WORKER_ID ?? `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}` };
}
