import { z } from 'zod';

/**
 * The building blocks of every process's environment schema, and the variables more than one
 * process reads. Each variable carries its documentation in its zod metadata (`.meta`): the
 * schemas are the single source of docs/configuration.md (`npm run docs:config`), so a variable
 * without a description fails the docs generator.
 *
 * Metadata keys beyond zod's own `description`: `defaultText` says what an unset variable means
 * when the schema has no literal default (a computed one, or "unset: off"), and `boundsText` the
 * accepted values where the schema checks them with a function the generator cannot read.
 */
declare module 'zod/v4/core' {
  interface GlobalMeta {
    defaultText?: string;
    boundsText?: string;
  }
}

/** Integer from an env string, with bounds. Empty strings count as unset. */
export const intVar = (def: number, min: number, max: number) =>
  z.preprocess((v) => (v === '' || v === undefined ? undefined : v), z.coerce.number().int().min(min).max(max).default(def));

const boolWords: Record<string, boolean> = {
  true: true,
  '1': true,
  yes: true,
  on: true,
  false: false,
  '0': false,
  no: false,
  off: false,
};

/** Boolean from an env string: true/false, 1/0, yes/no, on/off (any case). Empty strings count as unset. */
export const boolVar = (def: boolean) =>
  z
    .preprocess(
      (v) => (v === '' || v === undefined ? undefined : typeof v === 'string' ? (boolWords[v.toLowerCase()] ?? v) : v),
      z.boolean().default(def),
    )
    .meta({ boundsText: '`true` or `false` (also `1`/`0`, `yes`/`no`, `on`/`off`)' });

/** An optional string where an empty value counts as unset. */
export const optionalVar = <T extends z.ZodType<string | undefined>>(schema: T) =>
  z.preprocess((v) => (v === '' ? undefined : v), schema);

const postgresUrl = z
  .string()
  .refine((v) => /^postgres(ql)?:\/\//.test(v), 'must be a postgres:// or postgresql:// URL')
  .refine(
    (v) => !isMultiHost(v) || /[?&]target_session_attrs=(read-write|primary)(&|#|$)/.test(v),
    'lists several hosts: add ?target_session_attrs=read-write, so that only the primary is used',
  );

/** `postgres://user@h1:5432,h2:5432/db`: the host part holds a comma. */
function isMultiHost(url: string): boolean {
  const authority = url.replace(/^postgres(ql)?:\/\//, '').split(/[/?#]/)[0] ?? '';
  return authority.slice(authority.lastIndexOf('@') + 1).includes(',');
}
const redisUrl = z
  .string()
  .refine((v) => /^(rediss?|redis-cluster):\/\//.test(v), 'must be a redis://, rediss:// or redis-cluster:// URL');

export const CLUSTER_NODES = /^\s*[^\s,:]+:\d{1,5}\s*(,\s*[^\s,:]+:\d{1,5}\s*)*$/;

export const DEFAULT_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/quest_rewards';
export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/**
 * Read by every process before its schema (see env-file.ts); listed in each schema so that it is
 * documented, and checked, like every other variable.
 */
export const envFileEnv = {
  ENV_FILE: optionalVar(z.string().optional()).meta({
    description:
      'Dotenv file to read: a path, relative to the working directory (it must exist). Unset: the nearest `.env` ' +
      'from the working directory up to the project root (the directory holding `package-lock.json`). `/dev/null` ' +
      "reads none (the tests do this, so a developer's `.env` cannot change them).",
    defaultText: 'nearest `.env`',
    boundsText: 'a file path',
  }),
};

export const DATABASE_URL = z
  .string()
  .default(DEFAULT_DATABASE_URL)
  .pipe(postgresUrl)
  .meta({
    description:
      'PostgreSQL. `npm start`, `npm run migrate`, the API and quest-admin create the database if it is missing and ' +
      'apply pending migrations; a worker waits until it answers (an outage is waited out) and applies them. With a ' +
      'standby, list every node and keep only the primary: `postgres://user@pg1:5432,pg2:5432/quest_rewards?' +
      'target_session_attrs=read-write` (required with several hosts); after a failover every process reconnects ' +
      'to the new primary by itself. See [High availability](high-availability.md).',
    boundsText: '`postgres://` or `postgresql://` URL',
  });

/** PostgreSQL connections per process: the default differs by process. */
export const poolMaxVar = (def: number) => intVar(def, 1, 500).meta({ description: 'PostgreSQL connections per process.' });

/** Variables of the two service processes (API and worker) that touch the database. */
export const databaseEnv = {
  DATABASE_URL,
  DATABASE_POOL_MAX: poolMaxVar(10),
  LOG_LEVEL: z.enum(LOG_LEVELS).default('info').meta({ description: 'pino log level.' }),
};

/** The queue's Redis and topology: must match on the API and every worker (and `quest-admin status`). */
export const queueEnv = {
  REDIS_URL: z.string().default(DEFAULT_REDIS_URL).pipe(redisUrl).meta({
    description: 'Redis for the queue (the API also keeps its rate limits and Idempotency-Key digests there).',
    boundsText: '`redis://`, `rediss://` or `redis-cluster://` URL',
  }),
  REDIS_CLUSTER_NODES: z
    .string()
    .optional()
    .refine((v) => v === undefined || v.trim() === '' || CLUSTER_NODES.test(v), 'must be host:port[,host:port…]')
    .meta({
      description:
        "A Redis Cluster's seed nodes (any reachable nodes; the rest are discovered). When set it wins over `REDIS_URL`, " +
        'whose credentials, if any, are used (and TLS when it is a `rediss://` URL). See [Running on a Redis Cluster](scaling.md#running-on-a-redis-cluster).',
      defaultText: 'unset (no cluster)',
      boundsText: '`host:port,host:port,…`',
    }),
  QUEUE_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9_.-]{1,64}$/, 'letters, digits, _ . - only')
    .default('quest')
    .meta({
      description: 'Redis key prefix: one per environment sharing a Redis.',
      boundsText: 'letters, digits, `_` `.` `-`; 1–64 characters',
    }),
  QUEUE_PARTITIONS: intVar(16, 1, 256).meta({
    description:
      'Partition queues; must be equal everywhere (checked at start-up against Redis; changing it requires drained ' +
      'queues and the `{prefix}:{pool}:partitions` key deleted). Fewer partitions make bigger jobs (cheaper per ' +
      'request), more allow more busy workers: see [Scaling and partitions](scaling.md#scaling-and-partitions).',
  }),
};

/** Read by both service processes, with one meaning. */
export const serviceEnv = {
  JOB_RETENTION_SECONDS: intVar(60, 1, 7 * 86_400).meta({
    description:
      'How long finished jobs stay in Redis: the jobs an API process queues, for requests still waiting on them ' +
      '(raised to at least 2 × `BATCH_WAIT_MS`), and the ones the reconciler re-drives.',
  }),
  METRICS_SAMPLE_MS: intVar(5000, 0, 3_600_000).meta({
    description:
      'How often the sampled gauges of `GET /metrics` are refreshed: queue depths (API) and database sessions (API ' +
      'and worker); `0`: never. A scrape itself only serializes what is in memory.',
  }),
};

/**
 * Where the API listens. quest-admin reads the same two variables (from the same environment and
 * `.env`) to find the API when `API_BASE_URL` is unset.
 */
export const listenEnv = {
  HOST: z
    .preprocess((v) => (v === '' ? undefined : v), z.string().min(1).default('127.0.0.1'))
    .meta({
      description:
        "The API's listen address (`0.0.0.0` in containers). quest-admin builds `API_BASE_URL` from `HOST` and `PORT` " +
        'when that is unset (a wildcard or loopback `HOST` becomes 127.0.0.1).',
    }),
  PORT: intVar(3000, 0, 65_535).meta({
    description: "The API's listen port (`0`: any free port; quest-admin then assumes 3000).",
  }),
};

/**
 * The key that encrypts webhook signing secrets at rest: 32 bytes, as 64 hex digits or base64.
 * Null when the text is neither.
 */
export function parseSecretKey(text: string): Buffer | null {
  const t = text.trim();
  if (/^[0-9a-fA-F]{64}$/.test(t)) return Buffer.from(t, 'hex');
  if (/^[A-Za-z0-9+/_-]{42,44}={0,2}$/.test(t)) {
    const key = Buffer.from(t.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
    if (key.length === 32) return key;
  }
  return null;
}

/** Webhooks: read by the API (endpoints are created there) and the worker (deliveries are signed there). */
export const webhookEnv = {
  WEBHOOK_SECRET_KEY: optionalVar(
    z
      .string()
      .refine((v) => parseSecretKey(v) !== null, 'must be 32 bytes as 64 hex digits or base64 (openssl rand -hex 32)')
      .optional(),
  ).meta({
    description:
      'Key that encrypts webhook signing secrets at rest (AES-256-GCM): 32 bytes as 64 hex digits or base64, e.g. ' +
      '`openssl rand -hex 32`. The API and the worker need the same one; without it `POST /webhook-endpoints` answers ' +
      '503 `WEBHOOKS_NOT_CONFIGURED`. See [events](events.md).',
    defaultText: 'unset (no webhooks)',
    boundsText: '64 hex digits, or base64 of 32 bytes',
  }),
  WEBHOOK_ALLOW_PRIVATE_URLS: boolVar(false).meta({
    description:
      'Allow `http://` endpoint URLs and loopback, private and link-local addresses (tests and local development only: ' +
      'off, an endpoint can only reach public HTTPS addresses, checked on the address connected to).',
  }),
};
