import type { Command } from 'commander';
import { parseApiKey, parseRowId } from '../args.ts';
import type { CreditOptions } from '../commands/credit.ts';
import { type CommandOutput, type Context, EXIT } from '../context.ts';
import {
  DEFAULT_BATCH_SIZE,
  DEFAULT_CONCURRENCY,
  DEFAULT_STALL_TIMEOUT_SECONDS,
  DEFAULT_STALL_TRIES,
  MAX_BATCH_SIZE,
  MAX_CONCURRENCY,
  parseBaseUrl,
  parseBatchSize,
  parseBoundedInt,
} from './options.ts';

// `quest-admin credit`'s command line. The crediting (commands/credit.ts, with @quest/client) is
// loaded only when the command runs: this module is part of every start, so it imports nothing heavy.

/** Adds `credit` to the program (one line in program.ts). */
export function registerCreditCommand(
  program: Command,
  ctx: Context,
  run: (fn: () => Promise<CommandOutput>) => Promise<void>,
): void {
  program
    .command('credit')
    .description(
      'Credit points to accounts from a CSV (header "address,points") through the API, in batches, in file order. Re-running with the same file and --batch-size credits nothing twice (replayed rows are counted apart); rows not credited go to <file>.failed.csv with their line and reason',
    )
    .requiredOption('--quest <questId>', 'quest id', parseRowId)
    .requiredOption('--key <apiKey>', "the quest owner's API key (sk_…)", parseApiKey)
    .requiredOption('--file <path>', 'CSV file: header line "address,points", then one credit per line')
    .option(
      '--batch-size <n>',
      `rows per batch, 1..${MAX_BATCH_SIZE}; a re-run of a file must use the size it was first credited with`,
      parseBatchSize,
      DEFAULT_BATCH_SIZE,
    )
    .option(
      '--concurrency <n>',
      `batches in flight (each sent once the service has queued the one before, so file order holds), 1..${MAX_CONCURRENCY}`,
      (v) => parseBoundedInt(v, '--concurrency', 1, MAX_CONCURRENCY),
      DEFAULT_CONCURRENCY,
    )
    .option('--base-url <url>', `API address (default: ${ctx.config.API_BASE_URL}, ${baseUrlSource(ctx)})`, parseBaseUrl)
    .option(
      '--stall-timeout <seconds>',
      'seconds a batch may show no progress before it is sent again with the same key',
      (v) => parseBoundedInt(v, '--stall-timeout', 1, 86_400),
      DEFAULT_STALL_TIMEOUT_SECONDS,
    )
    .option(
      '--stall-tries <n>',
      'times a batch may stall before the run stops with an error',
      (v) => parseBoundedInt(v, '--stall-tries', 1, 100),
      DEFAULT_STALL_TRIES,
    )
    .addHelpText(
      'after',
      `\nExit status:\n  0  every row credited (by this run, or replayed from an earlier one)\n  ${EXIT.rowsNotCredited}  finished, but rows were not credited: they are in <file>.failed.csv with their lines, codes and reasons\n  ${EXIT.failed}  stopped before the end; the last line says whether running the same command again finishes it\n  ${EXIT.usage}  usage error`,
    )
    .action((opts: Omit<CreditOptions, 'batchSizeGiven'>, command: Command) => {
      // The hints repeat --batch-size only when the operator typed it (commander knows where a value came from).
      const batchSizeGiven = command.getOptionValueSource('batchSize') === 'cli';
      return run(async () => (await import('../commands/credit.ts')).creditCommand(ctx, { ...opts, batchSizeGiven }));
    });
}

/** Where the default API address comes from, as the help tells it: the value in force, not a constant. */
function baseUrlSource(ctx: Context): string {
  return ctx.config.apiBaseUrlFrom === 'API_BASE_URL'
    ? 'from API_BASE_URL'
    : "this machine's API: HOST and PORT of the environment or .env; API_BASE_URL overrides it";
}
