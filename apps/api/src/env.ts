import {
  boolVar,
  databaseEnv,
  envFileEnv,
  intVar,
  listenEnv,
  optionalVar,
  parseEnv,
  queueEnv,
  serviceEnv,
  trustProxyVar,
  webhookEnv,
  z,
} from '@quest/config';

const MiB = 1024 * 1024;

/**
 * Everything the API process reads from its environment, parsed once at start-up. Each variable's
 * description is its documentation (docs/configuration.md is generated from it).
 */
export const apiEnvSchema = z.object({
  ...envFileEnv,
  ...databaseEnv,
  ...queueEnv,
  ...serviceEnv,
  ...listenEnv,
  ...webhookEnv,
  BODY_LIMIT_BYTES: intVar(MiB, 1024, 64 * MiB).meta({
    description: 'Body limit of every route but the batch route (400 `PAYLOAD_TOO_LARGE` beyond).',
  }),
  BATCH_BODY_LIMIT_BYTES: intVar(4 * MiB, 1024, 512 * MiB).meta({
    description: 'Body limit of `POST /quests/{questId}/batches` (400 `PAYLOAD_TOO_LARGE` beyond).',
  }),
  ALLOCATION_WAIT_MS: intVar(5000, 0, 60_000).meta({
    description: "How long `POST /quests/{questId}` waits for the worker's decision before answering 202.",
  }),
  BATCH_WAIT_MS: intVar(30_000, 0, 600_000).meta({
    description: 'How long `POST /quests/{questId}/batches` waits for the batch to finish before answering 202.',
  }),
  BATCH_MAX_ITEMS: intVar(10_000, 1, 1_000_000).meta({
    description: 'Most items in one batch (400 `BATCH_TOO_LARGE` beyond).',
  }),
  COALESCE_MAX_ITEMS: intVar(500, 1, 10_000).meta({
    description:
      'Most requests coalesced into one job: requests for one partition that arrive while its previous job from this ' +
      'process is undecided travel together as one job, decided in one transaction.',
  }),
  AUTH_CACHE_TTL_MS: intVar(30_000, 0, 3_600_000).meta({
    description:
      'How long a positive API key / quest ownership answer is cached (`0`: no cache). Revocations and ownership ' +
      "changes clear every API process's cache at once through a PostgreSQL notification; this bounds staleness " +
      'only if notifications are lost.',
  }),
  ADMIN_TOKEN: optionalVar(z.string().min(16, 'at least 16 characters').optional()).meta({
    description:
      'Operator token: of the queue console at `/admin/queues`, and the operator sign-in of the console at `/console` ' +
      '(changing it ends operator sessions).',
    defaultText: 'unset (no queue console, no operator sign-in)',
    boundsText: 'at least 16 characters',
  }),
  ADMIN_QUEUE_ACTIONS: boolVar(false).meta({
    description: 'Let the queue console retry, promote, clean and remove jobs (read-only otherwise: 405 to anything but GET).',
  }),
  IDEMPOTENCY_GUARD_TTL_MS: intVar(86_400_000, 1000, 30 * 86_400_000).meta({
    description:
      "How long the digest of an Idempotency-Key's first body is kept in Redis, to refuse the key with another body at " +
      'once, also while the first request is pending.',
  }),
  RATE_LIMITS_ENABLED: boolVar(true).meta({
    description: 'Apply the `RATE_LIMIT_*` limits (turn them off only behind a gateway that limits clients itself).',
  }),
  RATE_LIMIT_WINDOW_MS: intVar(60_000, 1000, 3_600_000).meta({
    description: 'Length of every rate-limit window (fixed windows, counted in Redis and shared by all API processes).',
  }),
  RATE_LIMIT_ADDRESS_MAX: intVar(90_000, 1, 1_000_000_000).meta({
    description:
      'Requests per client address per window, on every route but `/healthz`. Default: 1,500/s over the default ' +
      'minute, about what one API process serves (1,400–1,700 allocations/s measured on 2 cores, ' +
      '[performance](performance.md)), so one address cannot take more than a whole process; raise it for clients ' +
      'behind one NAT or proxy (see `TRUST_PROXY`).',
  }),
  RATE_LIMIT_KEY_MAX: intVar(60_000, 1, 1_000_000_000).meta({
    description:
      'Requests per API key per window. Default: 1,000/s over the default minute, two thirds of what one API ' +
      'process serves, so a single runaway key leaves room for the others on the smallest deployment.',
  }),
  RATE_LIMIT_OWNER_ITEMS_MAX: intVar(1_500_000, 1, 1_000_000_000).meta({
    description:
      'Allocation items per owner per window (a single allocation is 1, a batch its item count). Default: 25,000/s ' +
      "over the default minute, the ledger's measured bulk-apply rate on 2 cores: an owner's batches may use all of " +
      'it, not queue more than it can decide.',
  }),
  RATE_LIMIT_AUTH_FAILURES_MAX: intVar(100, 1, 1_000_000_000).meta({
    description:
      "Requests answered `INVALID_API_KEY` per client address per window; beyond it, that address's keyed requests " +
      'get 429. Default 100 per minute: far more than a client with a mistyped key makes, and it holds a guesser to ' +
      '100 tries a minute per address.',
  }),
  HTTP_HEADERS_TIMEOUT_MS: intVar(10_000, 100, 600_000).meta({
    description: "A request's headers must arrive within this (a slowloris trickling its headers is cut off).",
  }),
  HTTP_REQUEST_TIMEOUT_MS: intVar(60_000, 100, 3_600_000).meta({
    description:
      'A whole request, body included, must arrive within this (the answer is not part of it, so it need not exceed `BATCH_WAIT_MS`).',
  }),
  HTTP_CONNECTION_TIMEOUT_MS: intVar(120_000, 100, 3_600_000).meta({
    description: 'A connection with no traffic in either direction for this long is closed.',
  }),
  HTTP_KEEP_ALIVE_TIMEOUT_MS: intVar(5_000, 100, 600_000).meta({
    description: 'An idle keep-alive connection is closed after this.',
  }),
  HTTP_MAX_CONNECTIONS: intVar(10_000, 1, 1_000_000).meta({
    description: 'Most connections open at once per API process; beyond it new ones are closed at once.',
  }),
  TRUST_PROXY: trustProxyVar().meta({
    description:
      'Which `X-Forwarded-*` headers to believe (the client address behind a proxy, per-address limits, HTTPS): ' +
      "`false` none; a list of the proxies' addresses or CIDR ranges, e.g. `10.0.0.0/8,loopback`: the client is the " +
      'last address in `X-Forwarded-For` that is not one of them, whatever a client wrote before it; `true` every ' +
      'hop: the first address, which a client behind a proxy that appends to the header chooses itself — only behind ' +
      'a proxy that overwrites it.',
  }),
  DATABASE_READ_URL: optionalVar(
    z
      .string()
      .refine((v) => /^postgres(ql)?:\/\//.test(v), 'must be a postgres:// or postgresql:// URL')
      .optional(),
  ).meta({
    description:
      'Standbys for the public reads only (`GET /quests`, `GET /campaigns/{id}`), e.g. ' +
      '`postgres://app@pg2:5432,pg3:5432/quest_rewards?target_session_attrs=prefer-standby`; they are served there ' +
      'while the standby is known to lag the primary by at most `DATABASE_READ_MAX_LAG_MS`, else by the primary. ' +
      'Owner-only reads, statuses and every write stay on the primary. See [High availability](high-availability.md#read-routing).',
    defaultText: 'unset: every read on the primary',
    boundsText: '`postgres://` or `postgresql://` URL',
  }),
  DATABASE_READ_MAX_LAG_MS: intVar(5000, 500, 3_600_000).meta({
    description:
      'Staleness bound of the public reads served by `DATABASE_READ_URL`: a read there misses no commit older than ' +
      'this (checked twice a second from WAL positions; `quest_read_replica_staleness_seconds` shows it).',
  }),
  DB_STATEMENT_TIMEOUT_MS: intVar(10_000, 0, 3_600_000).meta({
    description: 'PostgreSQL cancels an API query running longer than this (answered 503 `DATABASE_UNAVAILABLE`); `0`: no limit.',
  }),
});

export type ApiConfig = z.output<typeof apiEnvSchema>;

/** Parse the API's configuration; throws a ConfigError listing every bad variable. */
export function loadApiConfig(source: Record<string, string | undefined>): ApiConfig {
  return parseEnv(apiEnvSchema, source);
}
