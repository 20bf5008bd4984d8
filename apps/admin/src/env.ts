import { databaseEnv, intVar, parseEnv, queueEnv, z } from '@quest/config';

const WILDCARD_HOSTS = new Set(['0.0.0.0', '::', '[::]', '127.0.0.1', 'localhost', '::1', '[::1]']);

/** Everything the admin CLI reads from its environment, parsed once at start-up. */
export const adminEnvSchema = z
  .object({
    DATABASE_URL: databaseEnv.DATABASE_URL,
    /** Redis, queue prefix and partition count of the pool that `status` describes. */
    ...queueEnv,
    /** Where the API listens: the target of `credit` and of the demo's curl commands. */
    API_BASE_URL: z
      .preprocess((v) => (v === '' ? undefined : v), z.string().optional())
      .pipe(z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }).optional())
      .transform((url) => url?.replace(/\/+$/, '')),
    /** The API's own listen address, read only to build API_BASE_URL when that is unset. */
    HOST: z.string().optional(),
    /** As the API reads it; 0 (a random port) cannot be guessed, so it counts as the default. */
    PORT: intVar(3000, 0, 65_535),
  })
  .transform(({ HOST, PORT, API_BASE_URL, ...rest }) => {
    if (API_BASE_URL) return { ...rest, API_BASE_URL, apiBaseUrlFrom: 'API_BASE_URL' as const };
    // Unset: the API this machine runs with the same environment (and `.env`) — same port, and the
    // same host unless it listens on a wildcard or loopback address.
    const host = !HOST || WILDCARD_HOSTS.has(HOST) ? '127.0.0.1' : HOST.includes(':') ? `[${HOST}]` : HOST;
    return { ...rest, API_BASE_URL: `http://${host}:${PORT || 3000}`, apiBaseUrlFrom: 'HOST/PORT' as const };
  });

export type AdminConfig = z.output<typeof adminEnvSchema>;

/** Throws a ConfigError listing every bad variable. */
export function loadAdminConfig(source: Record<string, string | undefined>): AdminConfig {
  return parseEnv(adminEnvSchema, source);
}
