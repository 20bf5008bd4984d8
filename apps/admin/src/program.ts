import { createRequire } from 'node:module';
import { Command, CommanderError, Help, type Option } from 'commander';
import { registerCreditCommand } from './credit/command.ts';
import { registerPayoutsCommand } from './reverse/command.ts';
import { registerRestoreCommand } from './restore/command.ts';
import type { CommandOutput, Context } from './context.ts';
import { registerCatalogCommands } from './tree/catalog.ts';
import { registerOperationCommands, registerServiceCommands } from './tree/operations.ts';
import { registerOwnerCommands } from './tree/owners.ts';

/**
 * The CLI's version: the version of this package (see CHANGELOG.md). Resolved by package name, so
 * the TypeScript, the bundle in dist/ and a bundle anywhere else in the repository all find it.
 */
export const VERSION: string = (createRequire(import.meta.url)('@quest/admin/package.json') as { version: string }).version;

/** Help lists every option with "(required)" after the ones that must be given. */
function optionDescription(this: Help, option: Option): string {
  const description = Help.prototype.optionDescription.call(this, option);
  return option.mandatory ? `${description} (required)` : description;
}

/**
 * The `quest-admin` command tree. Actions hand their result to `emit`; the caller prints it, so
 * every command has exactly one output, text or JSON.
 */
export function buildProgram(ctx: Context, emit: (output: CommandOutput) => void): Command {
  const program = new Command('quest-admin')
    .description(
      'Operator tools for the Quest Rewards Service: owners and API keys, accounts, campaigns, quests, feature flags, ledger audit.',
    )
    .option('--json', 'print exactly one JSON object on stdout instead of text')
    .option('-V, --version', 'print the version and exit')
    .on('option:version', () => {
      ctx.io.stdout(ctx.json ? `${JSON.stringify({ version: VERSION })}\n` : `${VERSION}\n`);
      throw new CommanderError(0, 'commander.version', VERSION);
    })
    .configureOutput({ writeOut: (s) => ctx.io.stdout(s), writeErr: (s) => ctx.io.stderr(s) })
    .configureHelp({ showGlobalOptions: true, optionDescription })
    .exitOverride()
    .hook('preAction', (_program, action) => {
      ctx.json = action.optsWithGlobals().json === true;
    })
    .addHelpText(
      'after',
      "\nEnvironment:\n  DATABASE_URL   PostgreSQL URL (default postgres://postgres@127.0.0.1:5432/quest_rewards)\n  API_BASE_URL   API address for credit and the demo's curl commands (default http://127.0.0.1:$PORT, PORT defaulting to 3000)\n  REDIS_URL, QUEUE_PREFIX, QUEUE_PARTITIONS   the queue that status reads (defaults redis://127.0.0.1:6379, quest, 16)\n  ENV_FILE       file of defaults for these (default: .env in this directory or up to the project root)\n\nThe schema is migrated automatically before any command that uses the database.",
    );
  // Each action imports its command's module when it runs: a command loads only what it needs
  // (postgres.js for the database commands, BullMQ and ioredis for status, the API client for
  // credit), and --help, --version or a usage error load none of it. The bundle keeps them apart
  // (scripts/build.mjs splits it at these imports).
  const run = (fn: () => Promise<CommandOutput>) => fn().then(emit);

  registerOwnerCommands(program, ctx, run);
  registerCatalogCommands(program, ctx, run);
  registerOperationCommands(program, ctx, run);
  registerCreditCommand(program, ctx, run);
  registerPayoutsCommand(program, ctx, run);
  registerRestoreCommand(program, ctx, run);
  registerServiceCommands(program, ctx, run);

  addUsageHints(program);
  return program;
}

/**
 * A usage error prints the error and one line pointing at the command's help, not the whole help
 * (which buried the error under 25 lines). Set on every command, since each names its own help.
 */
function addUsageHints(cmd: Command, path: string[] = []): void {
  cmd.showHelpAfterError(`(run "${['quest-admin', ...path, '--help'].join(' ')}" for usage)`);
  for (const sub of cmd.commands) addUsageHints(sub, [...path, sub.name()]);
}
