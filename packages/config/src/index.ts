import type { z } from 'zod';
import { ConfigError } from './errors.ts';
import { splitUrl } from './urls.ts';
import { CLUSTER_NODES } from './vars.ts';

export { ConfigError } from './errors.ts';
export { databaseName, describeUrl, firstAddress, withAddress, withDatabase } from './urls.ts';
export { findEnvFile, type LoadedEnvironment, loadEnvironment } from './env-file.ts';
export { type LocalWebhookSetup, projectEnvFile, setUpLocalWebhooks } from './local-webhooks.ts';
export { parseTrustProxy, type TrustProxy, trustProxyVar } from './trust-proxy.ts';
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
  let tls = '';
  try {
    const { scheme, userinfo } = splitUrl(source.REDIS_URL ?? '');
    if (userinfo) auth = `${userinfo}@`;
    if (scheme === 'rediss:') tls = '?tls=1';
  } catch {
    // no usable REDIS_URL: no credentials
  }
  return { ...source, REDIS_URL: `redis-cluster://${auth}${nodes.replace(/\s+/g, '')}${tls}` };
}

export { z } from 'zod';
