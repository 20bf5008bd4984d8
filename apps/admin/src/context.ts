import type { Sql } from '@quest/db';
import type { AdminConfig } from './env.ts';

export interface Io {
  stdout(text: string): void;
  stderr(text: string): void;
  /** Whether a progress bar may be drawn on stderr. */
  interactive: boolean;
}

/**
 * Exit codes: 0 done, 1 failed (or the audit found violations; a credit run stopped before the
 * end), 2 bad usage, 3 a credit run that finished with rows not credited (listed in its failed-rows
 * file). Scripts rely on them: never renumber.
 */
export const EXIT = { ok: 0, failed: 1, usage: 2, rowsNotCredited: 3 } as const;

/** What a command hands back; the runner prints exactly one of the two forms. */
export interface CommandOutput {
  json: Record<string, unknown>;
  text: string;
  /** Non-zero for a completed command whose answer is "no" (a failed audit). */
  exitCode?: number;
}

export const CLI_ERROR_CODES = ['FILE_NOT_READABLE', 'INVALID_CSV', 'REDIS_UNAVAILABLE'] as const;
export type CliErrorCode = (typeof CLI_ERROR_CODES)[number];

/** An expected failure of the CLI itself (unreadable input file, malformed CSV). */
export class CliError extends Error {
  override readonly name = 'CliError';
  readonly code: CliErrorCode;

  constructor(code: CliErrorCode, message: string) {
    super(message);
    this.code = code;
  }
}

/**
 * Per-invocation state: configuration, output streams, and the database pool, opened (after
 * bringing the schema up to date) only by commands that need it, so `--help` needs no database.
 * The database modules (postgres.js, the migrations) are loaded then too, not at start.
 */
export class Context {
  json = false;
  private sqlPromise: Promise<Sql> | undefined;

  constructor(
    readonly config: AdminConfig,
    readonly io: Io,
    /** The environment and directory the invocation was given (before the .env file). */
    readonly origin: { env: Record<string, string | undefined>; cwd: string },
  ) {}

  db(): Promise<Sql> {
    this.sqlPromise ??= (async () => {
      const [{ createSql }, { migrate }] = await Promise.all([import('@quest/db'), import('@quest/db/migrate')]);
      const result = await migrate(this.config.DATABASE_URL);
      if (!this.json) {
        if (result.createdDatabase) this.io.stderr('created database\n');
        if (result.applied.length) this.io.stderr(`applied migrations: ${result.applied.join(', ')}\n`);
      }
      return createSql(this.config.DATABASE_URL, { max: 4, applicationName: 'quest-admin' });
    })();
    return this.sqlPromise;
  }

  async close(): Promise<void> {
    const sql = await this.sqlPromise?.catch(() => undefined);
    await sql?.end({ timeout: 5 });
  }
}
