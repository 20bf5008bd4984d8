import { z } from 'zod';
import { ConfigError } from './errors.ts';

export { ConfigError } from './errors.ts';
export { findEnvFile, type LoadedEnvironment, loadEnvironment } from './env-file.ts';

/**
 * Parse an environment once, at start-up, with a zod schema. On failure, throw a ConfigError whose
 * message lists every bad variable on its own line, so the app can print it and exit non-zero.
 * This is the only module in the repository that is handed `process.env`; apps pass the parsed
 * result into constructors.
 */
export function parseEnv<S extends z.ZodType>(schema: S, source: Record<string, string | undefined>): z.output<S> {
  const result = schema.safeParse(source);
  if (result.success) return result.data;
  const lines = result.error.issues.map((issue) => {
    const key = issue.path.join('.') || '(environment)';
    return `  ${key}: ${issue.message} (got ${JSON.stringify(source[String(issue.path[0])] ?? null)})`;
  });
  throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
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
export const boolVar = (def: boolean) =>
  z.preprocess(
    (v) => (v === '' || v === undefined ? undefined : typeof v === 'string' ? (boolWords[v.toLowerCase()] ?? v) : v),
    z.boolean().default(def),
  );

const postgresUrl = z.string().refine((v) => /^postgres(ql)?:\/\//.test(v), 'must be a postgres:// or postgresql:// URL');
const redisUrl = z.string().refine((v) => /^rediss?:\/\//.test(v), 'must be a redis:// or rediss:// URL');

export const DEFAULT_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/quest_rewards';
export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** Variables shared by every process that touches the database. */
export const databaseEnv = {
  DATABASE_URL: z.string().default(DEFAULT_DATABASE_URL).pipe(postgresUrl),
  DATABASE_POOL_MAX: intVar(10, 1, 500),
  LOG_LEVEL: z.enum(LOG_LEVELS).default('info'),
};

/** Variables shared by the API and the worker (queue topology must match on both sides). */
export const queueEnv = {
  REDIS_URL: z.string().default(DEFAULT_REDIS_URL).pipe(redisUrl),
  QUEUE_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9_.-]{1,64}$/, 'letters, digits, _ . - only')
    .default('quest'),
  QUEUE_PARTITIONS: intVar(16, 1, 256),
};

export { z };
