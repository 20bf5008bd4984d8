import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import postgres from 'postgres';
import shift from 'postgres-shift';
import { databaseName, describeUrl, withDatabase } from '@quest/config/urls';
import { classifyDbError, createSql } from './client.ts';

/**
 * Found through the package, not relative to this file, so it also resolves when this module is
 * bundled into an app (scripts/build.mjs).
 */
export const MIGRATIONS_DIR = join(dirname(createRequire(import.meta.url).resolve('@quest/db/package.json')), 'migrations');

/** Arbitrary constant: the advisory lock every migrating process queues on. */
const MIGRATION_LOCK_ID = 7_351_042_001;

/**
 * Create the target database if it does not exist. Connects to the `postgres` maintenance
 * database of the same servers (with a multi-host URL, the primary: `target_session_attrs` is kept);
 * losing a race with a concurrent creator is fine.
 */
export async function ensureDatabase(url: string): Promise<boolean> {
  const name = databaseName(url);
  if (!name) throw new Error('DATABASE_URL names no database');
  const probe = postgres(url, { max: 1, onnotice: () => {}, connect_timeout: 5 });
  try {
    await probe`select 1`;
    return false;
  } catch (error) {
    if ((error as { code?: string }).code !== '3D000') throw error;
  } finally {
    await probe.end({ timeout: 1 });
  }
  const maintenance = postgres(withDatabase(url, 'postgres'), { max: 1, onnotice: () => {}, connect_timeout: 5 });
  try {
    await maintenance.unsafe(`create database "${name.replaceAll('"', '""')}"`);
    return true;
  } catch (error) {
    // Losing a creation race shows as 42P04, or as 23505 on pg_database when both got past the check.
    const code = (error as { code?: string }).code;
    if (code === '42P04' || code === '23505') return false;
    throw error;
  } finally {
    await maintenance.end({ timeout: 1 });
  }
}

export interface MigrateResult {
  createdDatabase: boolean;
  applied: string[];
}

/**
 * Apply pending migrations. Safe to call from many processes at once: each takes a session-level
 * advisory lock first, so one applies and the others then find nothing left to do.
 */
export async function migrate(url: string, opts: { dir?: string; createDatabase?: boolean } = {}): Promise<MigrateResult> {
  const createdDatabase = opts.createDatabase === false ? false : await ensureDatabase(url);
  const sql = createSql(url, { max: 2, applicationName: 'quest-rewards-migrate' });
  const applied: string[] = [];
  try {
    const lock = await sql.reserve();
    try {
      await lock`select pg_advisory_lock(${MIGRATION_LOCK_ID})`;
      await shift({
        sql,
        path: opts.dir ?? MIGRATIONS_DIR,
        after: ({ migration_id, name }: { migration_id: number; name: string }) => {
          applied.push(`${String(migration_id).padStart(5, '0')} ${name}`);
        },
      });
    } finally {
      await lock`select pg_advisory_unlock(${MIGRATION_LOCK_ID})`.catch(() => {});
      lock.release();
    }
  } finally {
    await sql.end({ timeout: 5 });
  }
  return { createdDatabase, applied };
}

/** The database is there but this process must not use it as configured (wrong name, credentials, schema). */
export class DatabaseConfigurationError extends Error {
  override readonly name = 'DatabaseConfigurationError';
}

const CONFIGURATION_HINTS: Record<string, string> = {
  '3D000': 'the database does not exist (create it with `npm run migrate`, or fix DATABASE_URL)',
  '28P01': 'password authentication failed (fix the credentials in DATABASE_URL)',
  '28000': 'the server refused this user or host (check DATABASE_URL and pg_hba.conf)',
  '42P01': 'a table is missing (the schema is not migrated: run `npm run migrate`)',
};

/**
 * Wait until PostgreSQL answers at `url`: an outage (refused connection, a restart in progress)
 * is waited out, logged every few attempts; a configuration error (missing database, failed
 * authentication) throws DatabaseConfigurationError at once, with one readable line.
 */
export async function waitForDatabase(
  url: string,
  opts: { logger?: { warn(obj: object, msg?: string): void }; maxPauseMs?: number; signal?: AbortSignal } = {},
): Promise<void> {
  const name = describeUrl(url, 'the configured database');
  for (let attempt = 1; ; attempt++) {
    const probe = createSql(url, { max: 1, applicationName: 'quest-rewards-probe', connectTimeout: 5 });
    try {
      await probe`select 1`;
      return;
    } catch (error) {
      const code = (error as { code?: string }).code ?? '';
      const kind = classifyDbError(error);
      if (kind === 'configuration' || (kind === 'permanent' && CONFIGURATION_HINTS[code])) {
        throw new DatabaseConfigurationError(
          `DATABASE_URL (${name}): ${CONFIGURATION_HINTS[code] ?? (error as Error).message} [${code}]`,
        );
      }
      if (kind === 'permanent') throw error;
      opts.logger?.warn({ err: error, attempt, database: name }, 'waiting for PostgreSQL');
      if (opts.signal?.aborted) throw error;
      await new Promise((r) => setTimeout(r, Math.min(opts.maxPauseMs ?? 2000, 100 * 2 ** Math.min(attempt, 10))));
    } finally {
      await probe.end({ timeout: 1 }).catch(() => {});
    }
  }
}
