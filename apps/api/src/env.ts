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
  /**
   * How long the API remembers the body an Idempotency-Key was first sent with (in Redis), to refuse
   * the key with another body at once, also while the first request is pending.
   */
  IDEMPOTENCY_GUARD_TTL_MS: intVar(86_400_000, 1000, 30 * 86_400_000),
  /** Trust X-Forwarded-* headers (only behind a proxy that sets them). */
  TRUST_PROXY: boolVar(false),
});

export type ApiConfig = z.output<typeof apiEnvSchema>;

/** Parse the API's configuration; throws a ConfigError listing every bad variable. */
export function loadApiConfig(source: Record<string, string | undefined> = process.env): ApiConfig {
  return parseEnv(apiEnvSchema, source);
}
