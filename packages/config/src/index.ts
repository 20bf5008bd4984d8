import type { z } from 'zod';
import { ConfigError } from './errors.ts';
import { CLUSTER_NODES } from './vars.ts';

export { ConfigError } from './errors.ts';
export { findEnvFile, type LoadedEnvironment, loadEnvironment } from './env-file.ts';
export {
  boolVar,
  DATABASE_URL,
  DEFAULT_DATABASE_URL,
  DEFAULT_REDIS_URL,
  databaseEnv,
  envFileEnv,
  intVar,
  LOG_LEVELS,
  listenEnv,
  optionalVar,
  parseSecretKey,
  poolMaxVar,
  queueEnv,
  serviceEnv,
  webhookEnv,
} from './vars.ts';

/**
 * Parse an environment once, at start-up, with a zod schema. On failure, throw a ConfigError whose
 * message lists every bad variable on its own line, so the app can print it and exit non-zero.
 * Only the processes' entry points hand the real environment to this (through loadEnvironment);
 * everything else receives the parsed result in its constructor.
 */
export function parseEnv<S extends z.ZodType>(schema: S, source: Record<string, string | undefined>): z.output<S> {
  const result = schema.safeParse(withRedisCluster(source));
  if (result.success) return result.data;
  const lines = result.error.issues.map((issue) => {
    const key = issue.path.join('.') || '(environment)';
    return `  ${key}: ${issue.message} (got ${JSON.stringify(source[String(issue.path[0])] ?? null)})`;
  });
  throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
}

/**
 * REDIS_CLUSTER_NODES=host:port,host:port,… (a Redis Cluster's seed nodes) wins over REDIS_URL:
 * it becomes `redis-cluster://[credentials of REDIS_URL@]host:port,…`, the one string every
 * connection is made from (packages/queue/src/connection.ts). A malformed list is left for the
 * schema to report.
 */
function withRedisCluster(source: Record<string, string | undefined>): Record<string, string | undefined> {
  const nodes = source.REDIS_CLUSTER_NODES?.trim();
  if (!nodes || !CLUSTER_NODES.test(nodes)) return source;
  let auth = '';
  try {
    const u = new URL(source.REDIS_URL ?? '');
    if (u.username || u.password) auth = `${u.username}${u.password ? `:${u.password}` : ''}@`;
  } catch {
    // no usable REDIS_URL: no credentials
  }
  return { ...source, REDIS_URL: `redis-cluster://${auth}${nodes.replace(/\s+/g, '')}` };
}

export { z } from 'zod';
