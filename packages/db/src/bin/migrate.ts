import { ConfigError, loadEnvironment, parseEnv } from '@quest/config';
import { migrate } from '../migrate.ts';
import { migrateEnvSchema } from './env.ts';

try {
  const env = parseEnv(migrateEnvSchema, loadEnvironment(process.env).env);
  const result = await migrate(env.DATABASE_URL);
  if (result.createdDatabase) console.log('created database');
  console.log(result.applied.length ? `applied: ${result.applied.join(', ')}` : 'schema is up to date');
} catch (error) {
  console.error(error instanceof ConfigError ? error.message : `migration failed: ${(error as Error).message}`);
  process.exit(1);
}
