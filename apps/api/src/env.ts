import { boolVar, databaseEnv, intVar, parseEnv, queueEnv, z } from '@quest/config';

const MiB = 1024 * 1024;

/** Everything the API process reads from its environment, parsed once at start-up. */
export const apiEnvSchema = z.object({
  ...databaseEnv,
  ...queueEnv,
  HOST: z.string().min(1).default('127.0.0.1'),
  PORT: intVar(3000, 0, 65_535),
  /** Body limit of every route but the batch route. */
  BODY_LIMIT_BYTES: intVar(MiB, 1024, 64 * MiB),
  /** How long POST /quests/{questId} waits for the worker's decision before answering 202. */
  ALLOCATION_WAIT_MS: intVar(5000, 0, 60_000),
  /** How long POST /quests/{questId}/batches waits for the batch to finish before answering 202. */
  BATCH_WAIT_MS: intVar(30_000, 0, 600_000),
  /** Seconds finished queue jobs stay in Redis for late waiters (raised to at least 2 × the longest wait). */
  JOB_RETENTION_SECONDS: intVar(60, 1, 7 * 86_400),
  BATCH_MAX_ITEMS: intVar(10_000, 1, 1_000_000),
  /**
   * Jobs of one partition this process keeps queued but undecided before it holds new requests
   * back and sends them together as one job (coalescing). Lower: bigger jobs, fewer transactions.
   */
  COALESCE_MAX_IN_FLIGHT: intVar(1, 1, 64),
  /** Most requests coalesced into one job. */
  COALESCE_MAX_ITEMS: intVar(500, 1, 10_000),
  BATCH_BODY_LIMIT_BYTES: intVar(4 * MiB, 1024, 512 * MiB),
  /** Capped so that a flag switched by an operator is seen within 2 s, whatever is configured. */
  FLAGS_REFRESH_MS: intVar(1000, 50, 1500),
  /**
   * How long a positive key/quest ownership answer is cached (0: no cache). Revocations clear every
   * API process's cache at once through a PostgreSQL notification; this bounds staleness only if
   * notifications are lost.
   */
  AUTH_CACHE_TTL_MS: intVar(30_000, 0, 3_600_000),
  /** How often the queue-depth and database-session gauges of GET /metrics are sampled (0: never). */
  METRICS_SAMPLE_MS: intVar(5000, 0, 3_600_000),
  /** Operator token of the queue console at /admin/queues (unset: no console). */
  ADMIN_TOKEN: z.preprocess((v) => (v === '' ? undefined : v), z.string().min(16, 'at least 16 characters').optional()),
  /** Let the queue console retry, promote, clean and remove jobs (read-only otherwise). */
  ADMIN_QUEUE_ACTIONS: boolVar(false),
  /**
   * How long the API remembers the body an Idempotency-Key was first sent with (in Redis), to refuse
   * the key with another body at once, also while the first request is pending.
   */
  IDEMPOTENCY_GUARD_TTL_MS: intVar(86_400_000, 1000, 30 * 86_400_000),
  /** Apply the rate limits below (turn off only behind a gateway that limits clients itself). */
  RATE_LIMITS_ENABLED: boolVar(true),
  /** Length of every rate-limit window (fixed windows, counted in Redis across API processes). */
  RATE_LIMIT_WINDOW_MS: intVar(60_000, 1000, 3_600_000),
  /** Requests per client address per window, on every route but the probes. */
  RATE_LIMIT_ADDRESS_MAX: intVar(1_000_000, 1, 1_000_000_000),
  /** Requests per API key per window. */
  RATE_LIMIT_KEY_MAX: intVar(1_000_000, 1, 1_000_000_000),
  /** Allocation items per owner per window (a single allocation is 1, a batch its item count). */
  RATE_LIMIT_OWNER_ITEMS_MAX: intVar(10_000_000, 1, 1_000_000_000),
  /** Requests answered INVALID_API_KEY per client address per window; beyond it, keyed requests get 429. */
  RATE_LIMIT_AUTH_FAILURES_MAX: intVar(10_000, 1, 1_000_000_000),
  /** A request's headers must arrive within this (a slowloris trickling its headers is cut off). */
  HTTP_HEADERS_TIMEOUT_MS: intVar(10_000, 100, 600_000),
  /** A whole request, body included, must arrive within this; above BATCH_WAIT_MS is not needed (the answer is not part of it). */
  HTTP_REQUEST_TIMEOUT_MS: intVar(60_000, 100, 3_600_000),
  /** A connection with no traffic in either direction for this long is closed. */
  HTTP_CONNECTION_TIMEOUT_MS: intVar(120_000, 100, 3_600_000),
  /** An idle keep-alive connection is closed after this. */
  HTTP_KEEP_ALIVE_TIMEOUT_MS: intVar(5_000, 100, 600_000),
  /** Most connections open at once per API process; beyond it new ones are closed at once. */
  HTTP_MAX_CONNECTIONS: intVar(10_000, 1, 1_000_000),
  /** Trust X-Forwarded-* headers (only behind a proxy that sets them). */
  TRUST_PROXY: boolVar(false),
  /** PostgreSQL cancels an API query running longer than this (0: no limit); answered 503. */
  DB_STATEMENT_TIMEOUT_MS: intVar(10_000, 0, 3_600_000),
});

export type ApiConfig = z.output<typeof apiEnvSchema>;

/** Parse the API's configuration; throws a ConfigError listing every bad variable. */
export function loadApiConfig(source: Record<string, string | undefined> = process.env): ApiConfig {
  return parseEnv(apiEnvSchema, source);
}
