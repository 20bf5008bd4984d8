import { databaseEnv, parseEnv, queueEnv, z } from '@quest/config';

/** Everything the admin CLI reads from its environment, parsed once at start-up. */
export const adminEnvSchema = z.object({
  DATABASE_URL: databaseEnv.DATABASE_URL,
  /** Redis, queue prefix and partition count of the pool that `status` describes. */
  ...queueEnv,
  /** Where the API listens: the target of `credit` and of the demo's curl commands. */
  API_BASE_URL: z
    .string()
    .default('http://127.0.0.1:3000')
    .pipe(z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }))
    .transform((url) => url.replace(/\/+$/, '')),
});

export type AdminConfig = z.output<typeof adminEnvSchema>;

/** Throws a ConfigError listing every bad variable. */
export function loadAdminConfig(source: Record<string, string | undefined>): AdminConfig {
  return parseEnv(adminEnvSchema, source);
}
