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

/** How long a migration statement waits for a table lock before the attempt gives up (default). */
export const MIGRATION_LOCK_TIMEOUT_MS = 2_000;
/** How long migrate() keeps trying when its locks are taken (default). */
export const MIGRATION_RETRY_FOR_MS = 300_000;

export interface MigrateOptions {
  dir?: string;
  createDatabase?: boolean;
  /** Most a statement waits for a lock; then the attempt rolls back and is tried again. */
  lockTimeoutMs?: number;
  /** Give up (throw the lock timeout) after trying for this long. */
  retryForMs?: number;
  /** Told of each attempt that gave up waiting for a lock. */
  logger?: { warn(obj: object, msg?: string): void };
}

/**
 * Apply pending migrations. Safe to call from many processes at once: each takes a session-level
 * advisory lock first, so one applies and the others then find nothing left to do.
 *
 * A migration that alters a busy table (00012 drops a key between `events` and
 * `webhook_deliveries`) needs an exclusive lock, and while it waits for one — behind a long
 * transaction or a slow read — every query on that table queues behind it: the ledger's event
 * inserts with them. So each statement waits at most `lockTimeoutMs` for a lock; then the
 * migrations' transaction rolls back, the queue drains, and the attempt is made again after a
 * pause, until `retryForMs` has passed. Written here because postgres-shift runs the pending
 * migrations in one transaction and has no such option.
 */
export async function migrate(url: string, opts: MigrateOptions = {}): Promise<MigrateResult> {
  const createdDatabase = opts.createDatabase === false ? false : await ensureDatabase(url);
  const sql = createSql(url, {
    max: 2,
    applicationName: 'quest-rewards-migrate',
    lockTimeoutMs: opts.lockTimeoutMs ?? MIGRATION_LOCK_TIMEOUT_MS,
  });
  const applied: string[] = [];
  const deadline = Date.now() + (opts.retryForMs ?? MIGRATION_RETRY_FOR_MS);
  try {
    const lock = await sql.reserve();
    try {
      // Processes queue on the advisory lock for as long as the one migrating takes.
      await lock`select set_config('lock_timeout', '0', false)`;
      await lock`select pg_advisory_lock(${MIGRATION_LOCK_ID})`;
      for (let attempt = 1; ; attempt++) {
        try {
          await shift({
            sql,
            path: opts.dir ?? MIGRATIONS_DIR,
            after: ({ migration_id, name }: { migration_id: number; name: string }) => {
              applied.push(`${String(migration_id).padStart(5, '0')} ${name}`);
            },
          });
          break;
        } catch (error) {
          if ((error as { code?: string }).code !== '55P03' || Date.now() >= deadline) throw error;
          applied.length = 0; // rolled back: nothing of this attempt is applied
          const pauseMs = Math.min(250 * 2 ** Math.min(attempt - 1, 4), 4_000);
          opts.logger?.warn({ err: error, attempt, pauseMs }, 'a migration waited too long for a lock; trying again');
          await new Promise((resolve) => setTimeout(resolve, pauseMs));
        }
      }
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
