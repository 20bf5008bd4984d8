import { CommanderError } from 'commander';
import { ConfigError, loadEnvironment } from '@quest/config';
import { describeUrl } from '@quest/config/urls';
import { isAdminError } from '@quest/db/admin-errors';
import { CliError, type CommandOutput, Context, EXIT, type Io } from './context.ts';
import { loadAdminConfig } from './env.ts';
import { buildProgram } from './program.ts';

const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'CONNECT_TIMEOUT',
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'TARGET_SESSION_ATTRS',
]);

const MAX_MESSAGE = 300;

/** Where the database is, for messages: never the password. */
function describeDatabase(url: string): string {
  return describeUrl(url, 'the configured database');
}

/** One readable line and a stable code for any failure; stack traces are for bugs in development. */
export function describeError(error: unknown, databaseUrl: string): { code: string; message: string } {
  if (isAdminError(error) || error instanceof CliError) return { code: error.code, message: error.message };
  const e = error as { code?: unknown; message?: unknown; severity?: unknown } | null;
  const full = typeof e?.message === 'string' ? e.message.split('\n')[0]! : String(error);
  // Database messages may quote a whole parameter; one line means one readable line.
  const message = full.length > MAX_MESSAGE ? `${full.slice(0, MAX_MESSAGE)}…` : full;
  const code = typeof e?.code === 'string' ? e.code : undefined;
  if (code && CONNECTION_CODES.has(code)) {
    return { code: 'DATABASE_UNAVAILABLE', message: `cannot reach PostgreSQL at ${describeDatabase(databaseUrl)}: ${message}` };
  }
  if (code && typeof e?.severity === 'string') {
    return { code: 'DATABASE_ERROR', message: `database error ${code} at ${describeDatabase(databaseUrl)}: ${message}` };
  }
  return { code: 'INTERNAL_ERROR', message: `unexpected failure: ${message}` };
}

function print(ctx: Context, output: CommandOutput): void {
  if (ctx.json) ctx.io.stdout(`${JSON.stringify(output.json)}\n`);
  else ctx.io.stdout(`${output.text}\n`);
}

/** `--json` among the options (not after a `--` that ends them). */
export function jsonRequested(argv: readonly string[]): boolean {
  const end = argv.indexOf('--');
  return (end === -1 ? argv : argv.slice(0, end)).includes('--json');
}

function usageMessage(error: CommanderError): string {
  // A command group without its subcommand: commander printed that group's help.
  if (error.code === 'commander.help') return 'a subcommand is required; the usage is on stderr (or run with --help)';
  return error.message.replace(/^error: /, '');
}

/** Run one invocation; resolves to the process exit code. Never throws. */
export async function main(
  argv: readonly string[],
  env: Record<string, string | undefined>,
  io: Io,
  cwd: string = process.cwd(),
): Promise<number> {
  let config: ReturnType<typeof loadAdminConfig>;
  try {
    // The real environment, with a `.env` file filling in what it leaves unset (see @quest/config).
    config = loadAdminConfig(loadEnvironment(env, cwd).env);
  } catch (error) {
    const message = error instanceof ConfigError ? error.message : String(error);
    io.stderr(`quest-admin: ${message}\n`);
    if (jsonRequested(argv)) io.stdout(`${JSON.stringify({ error: { code: 'INVALID_CONFIGURATION', message } })}\n`);
    return EXIT.failed;
  }
  const ctx = new Context(config, io, { env, cwd });
  // Known before parsing, so that a usage error (or --version) answers in JSON too.
  ctx.json = jsonRequested(argv);
  let output: CommandOutput | undefined;
  const program = buildProgram(ctx, (o) => {
    output = o;
  });
  try {
    await program.parseAsync([...argv], { from: 'user' });
    if (!output) return EXIT.ok;
    print(ctx, output);
    return output.exitCode ?? EXIT.ok;
  } catch (error) {
    // Commander has already printed the usage message (or the help that was asked for) on stderr.
    if (error instanceof CommanderError) {
      if (error.exitCode === 0) return EXIT.ok;
      if (ctx.json) io.stdout(`${JSON.stringify({ error: { code: 'USAGE_ERROR', message: usageMessage(error) } })}\n`);
      return EXIT.usage;
    }
    const { code, message } = describeError(error, config.DATABASE_URL);
    io.stderr(`error: ${message}\n`);
    if (ctx.json) io.stdout(`${JSON.stringify({ error: { code, message } })}\n`);
    return EXIT.failed;
  } finally {
    await ctx.close().catch(() => {});
  }
}
