import { DATABASE_URL, envFileEnv, listenEnv, optionalVar, parseEnv, queueEnv, z } from '@quest/config';

const WILDCARD_HOSTS = new Set(['0.0.0.0', '::', '[::]', '127.0.0.1', 'localhost', '::1', '[::1]']);

/**
 * Everything the admin CLI reads from its environment, parsed once at start-up. Each variable's
 * description is its documentation (docs/configuration.md is generated from it). The queue
 * variables describe the pool that `status` reads; HOST and PORT are the API's, read only to build
 * API_BASE_URL when that is unset.
 */
export const adminEnvSchema = z
  .object({
    ...envFileEnv,
    DATABASE_URL,
    ...queueEnv,
    ...listenEnv,
    API_BASE_URL: optionalVar(z.string().optional())
      .pipe(z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }).optional())
      .transform((url) => url?.replace(/\/+$/, ''))
      .meta({
        description:
          "Where quest-admin reaches the API: the target of `credit` and of the demo's curl lines. When unset it follows " +
          "the API's `HOST`/`PORT` from the same environment and `.env`; set it when the API is elsewhere (another " +
          'host, a proxy, HTTPS).',
        defaultText: '`http://127.0.0.1:$PORT`',
        boundsText: '`http://` or `https://` URL',
      }),
  })
  .transform(({ HOST, PORT, API_BASE_URL, ...rest }) => {
    if (API_BASE_URL) return { ...rest, API_BASE_URL, apiBaseUrlFrom: 'API_BASE_URL' as const };
    // Unset: the API this machine runs with the same environment (and `.env`) — same port, and the
    // same host unless it listens on a wildcard or loopback address.
    const host = WILDCARD_HOSTS.has(HOST) ? '127.0.0.1' : HOST.includes(':') ? `[${HOST}]` : HOST;
    // 0 (a random port) cannot be guessed, so it counts as the default.
    return { ...rest, API_BASE_URL: `http://${host}:${PORT || 3000}`, apiBaseUrlFrom: 'HOST/PORT' as const };
  });

export type AdminConfig = z.output<typeof adminEnvSchema>;

/** Throws a ConfigError listing every bad variable. */
export function loadAdminConfig(source: Record<string, string | undefined>): AdminConfig {
  return parseEnv(adminEnvSchema, source);
}
