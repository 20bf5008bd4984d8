import { type Command, InvalidArgumentError } from 'commander';
import { parseApiKey, parseRowId } from '../args.ts';
import type { ReverseOptions } from '../commands/payouts.ts';
import { type CommandOutput, type Context, EXIT } from '../context.ts';
import { parseBaseUrl, parseBoundedInt } from '../credit/options.ts';

// `quest-admin payouts reverse`'s command line. The reversing (commands/payouts.ts, with
// @quest/client) is loaded only when the command runs: this module is part of every start, so it
// imports nothing heavy.

export const DEFAULT_REVERSE_CONCURRENCY = 8;
export const MAX_REVERSE_CONCURRENCY = 64;
export const MAX_REASON_LENGTH = 500;

function parseReason(value: string): string {
  if (value.length > MAX_REASON_LENGTH)
    throw new InvalidArgumentError(`at most ${MAX_REASON_LENGTH} characters (got ${value.length})`);
  return value;
}

/** Adds `payouts reverse` to the program (one line in program.ts). */
export function registerPayoutsCommand(
  program: Command,
  ctx: Context,
  run: (fn: () => Promise<CommandOutput>) => Promise<void>,
): void {
  const payouts = program.command('payouts').description("A quest's payouts");
  payouts
    .command('reverse')
    .description(
      'Reverse payouts of a quest through the API: those of a CSV of payout ids (--file, header "payout_id" and optionally "points"; without points, the whole payout), or every payout of a CSV of addresses (--addresses, header "address"). Re-running reverses nothing twice (a payout with nothing left counts as done); rows not reversed go to <file>.failed.csv',
    )
    .requiredOption('--quest <questId>', 'quest id', parseRowId)
    .requiredOption('--key <apiKey>', "the quest owner's API key (sk_…)", parseApiKey)
    .option('--file <path>', 'CSV of payout ids: header "payout_id" (and optionally "points"), one payout per line')
    .option('--addresses <path>', 'CSV of addresses: header "address"; every payout of each on the quest is reversed')
    .option('--reason <text>', `why, recorded with every reversal (at most ${MAX_REASON_LENGTH} characters)`, parseReason)
    .option(
      '--concurrency <n>',
      `reversals in flight, 1..${MAX_REVERSE_CONCURRENCY}`,
      (v) => parseBoundedInt(v, '--concurrency', 1, MAX_REVERSE_CONCURRENCY),
      DEFAULT_REVERSE_CONCURRENCY,
    )
    .option('--base-url <url>', `API address (default: ${ctx.config.API_BASE_URL})`, parseBaseUrl)
    .addHelpText(
      'after',
      `\nExit status:\n  0  every payout reversed (by this run, replayed from an earlier one, or already reversed)\n  ${EXIT.rowsNotCredited}  finished, but rows were not reversed: they are in <file>.failed.csv with their codes\n  ${EXIT.failed}  stopped before the end; the last line says whether running the same command again finishes it\n  ${EXIT.usage}  usage error`,
    )
    .action((opts: ReverseOptions, cmd: Command) => {
      if ((opts.file === undefined) === (opts.addresses === undefined))
        cmd.error('error: give exactly one of --file and --addresses', { exitCode: EXIT.usage, code: 'quest.usage' });
      return run(async () => (await import('../commands/payouts.ts')).reverseCommand(ctx, opts));
    });
}
