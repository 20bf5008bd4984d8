import { DATABASE_URL, envFileEnv, z } from '@quest/config';

/** What `npm run migrate` reads from its environment (docs/configuration.md is generated from it). */
export const migrateEnvSchema = z.object({ ...envFileEnv, DATABASE_URL });
