import { createRequire } from 'node:module';
import { Command, CommanderError, Help, InvalidArgumentError, type Option } from 'commander';
import { FEATURES } from '@quest/db/flags';
import { MAX_LIST_LIMIT } from '@quest/db/lists';
import {
  DEFAULT_LIST_LIMIT,
  parseActionStatus,
  parseAfterInt,
  parseDeliveryStatus,
  parseEndpointId,
  parseKeyRef,
  parseLimit,
  parseFeatureAssignments,
  parseInstant,
  parseKeyId,
  parseName,
  parseNonNegativeInt,
  parseOwnerId,
  parsePassAddress,
  parseRowId,
  parseThreshold,
} from './args.ts';
import { registerCreditCommand } from './credit/command.ts';
import { registerPayoutsCommand } from './reverse/command.ts';
import { registerRestoreCommand } from './restore/command.ts';
import type { CommandOutput, Context } from './context.ts';

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

/** Report a bad combination of arguments the way commander reports a bad single one. */
function usageError(cmd: Command, message: string): never {
  cmd.error(`error: ${message}`, { exitCode: 2, code: 'quest.usage' });
}

function checkWindow(cmd: Command, opts: { start: Date; end: Date }): void {
  if (opts.end.getTime() <= opts.start.getTime())
    usageError(cmd, `--end (${opts.end.toISOString()}) must be after --start (${opts.start.toISOString()})`);
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

  const owner = program.command('owner').description('Quest owners');
  owner
    .command('create')
    .description('Create an owner and its first API key (the key is shown only once)')
    .requiredOption('--name <name>', 'owner display name', parseName)
    .requiredOption(
      '--pass <address>',
      'owner pass address, 0x + 40 hex digits in any case (stored in EIP-55 form)',
      parsePassAddress,
    )
    .action((opts) => run(async () => (await import('./commands/owners.ts')).ownerCreate(ctx, opts)));

  owner
    .command('list')
    .description('List owners in id order, with their active keys and quests')
    .option('--limit <n>', `owners per page, 1-${MAX_LIST_LIMIT}`, parseLimit, DEFAULT_LIST_LIMIT)
    .option('--after <ownerId>', 'continue after this owner id (the "next" of the previous page)', parseOwnerId)
    .action((opts) => run(async () => (await import('./commands/lists.ts')).ownerList(ctx, opts)));

  const key = program.command('key').description('Owner API keys');
  key
    .command('create')
    .description('Issue another API key to an owner (shown only once)')
    .requiredOption('--owner <ownerId>', 'owner id (own_…)', parseOwnerId)
    .action((opts) => run(async () => (await import('./commands/owners.ts')).keyCreate(ctx, opts)));
  key
    .command('revoke')
    .description('Revoke an API key; it stops working at once (revoking it again changes nothing and says so)')
    .requiredOption('--key <key>', 'the key id (key_…, see "key list") or the full key (sk_…)', parseKeyRef)
    .action((opts) => run(async () => (await import('./commands/owners.ts')).keyRevoke(ctx, opts)));
  key
    .command('list')
    .description('List API keys in id order: id, display prefix, owner, created, revoked (never the key itself)')
    .option('--owner <ownerId>', "only this owner's keys", parseOwnerId)
    .option('--limit <n>', `keys per page, 1-${MAX_LIST_LIMIT}`, parseLimit, DEFAULT_LIST_LIMIT)
    .option('--after <keyId>', 'continue after this key id (the "next" of the previous page)', parseKeyId)
    .action((opts) => run(async () => (await import('./commands/lists.ts')).keyList(ctx, opts)));

  const account = program.command('account').description('Accounts that receive points');
  account
    .command('create')
    .description('Create one account')
    .requiredOption('--pass <address>', 'pass address, 0x + 40 hex digits in any case (stored in EIP-55 form)', parsePassAddress)
    .action((opts) => run(async () => (await import('./commands/accounts.ts')).accountCreate(ctx, opts)));
  account
    .command('import')
    .description('Create accounts in bulk from a CSV file with a "pass" header; existing ones are skipped')
    .requiredOption('--file <path>', 'CSV file: header line "pass", then one address per line')
    .action((opts) => run(async () => (await import('./commands/accounts.ts')).accountImport(ctx, opts)));

  account
    .command('list')
    .description('List accounts in id order, with their balances')
    .option('--limit <n>', `accounts per page, 1-${MAX_LIST_LIMIT}`, parseLimit, DEFAULT_LIST_LIMIT)
    .option('--after <accountId>', 'continue after this account id (the "next" of the previous page)', parseAfterInt)
    .action((opts) => run(async () => (await import('./commands/lists.ts')).accountList(ctx, opts)));

  const campaign = program.command('campaign').description('Campaigns (groups of quests)');
  campaign
    .command('create')
    .description('Create a campaign')
    .requiredOption('--name <name>', 'campaign name', parseName)
    .requiredOption('--description <text>', 'campaign description')
    .requiredOption('--start <iso>', 'start, ISO 8601 (e.g. 2025-06-01T00:00:00Z)', parseInstant)
    .requiredOption('--end <iso>', 'end, ISO 8601, after the start', parseInstant)
    .option('--external-app-id <id>', 'id of a linked external application')
    .option('--inactive', 'create the campaign inactive')
    .action((opts, cmd: Command) => {
      checkWindow(cmd, opts);
      return run(async () => (await import('./commands/quests.ts')).campaignCreate(ctx, opts));
    });

  campaign
    .command('list')
    .description('List campaigns in id order, with their number of quests')
    .option('--limit <n>', `campaigns per page, 1-${MAX_LIST_LIMIT}`, parseLimit, DEFAULT_LIST_LIMIT)
    .option('--after <campaignId>', 'continue after this campaign id (the "next" of the previous page)', parseRowId)
    .action((opts) => run(async () => (await import('./commands/lists.ts')).campaignList(ctx, opts)));

  const quest = program.command('quest').description('Quests (points budgets)');
  quest
    .command('create')
    .description('Create a quest; its whole budget starts unallocated')
    .requiredOption('--owner <ownerId>', 'owner id (own_…)', parseOwnerId)
    .option('--campaign <campaignId>', 'campaign id', parseRowId)
    .requiredOption('--name <name>', 'quest name', parseName)
    .requiredOption('--description <text>', 'quest description')
    .requiredOption('--start <iso>', 'start of the active window, ISO 8601', parseInstant)
    .requiredOption('--end <iso>', 'end of the active window, ISO 8601, after the start', parseInstant)
    .requiredOption('--total-points <n>', 'points budget', parseNonNegativeInt)
    .requiredOption('--expected-points <n>', 'expected points per completion', parseNonNegativeInt)
    .option('--private', 'leave the quest out of the public list')
    .option(
      '--budget-low-threshold <points>',
      'send quest.budget_low when points remaining fall to this or below (default: 10 % of the total)',
      parseNonNegativeInt,
    )
    .action((opts, cmd: Command) => {
      checkWindow(cmd, opts);
      return run(async () => (await import('./commands/quests.ts')).questCreate(ctx, opts));
    });
  quest
    .command('action')
    .description("Switch a quest's action type")
    .requiredOption('--id <questId>', 'quest id', parseRowId)
    .requiredOption('--status <status>', 'active or deactivated', parseActionStatus)
    .action((opts) => run(async () => (await import('./commands/quests.ts')).questAction(ctx, opts)));
  quest
    .command('update')
    .description("Change a quest's settings")
    .requiredOption('--id <questId>', 'quest id', parseRowId)
    .requiredOption(
      '--budget-low-threshold <points>',
      'send quest.budget_low when points remaining fall to this or below; "default": 10 % of the total',
      parseThreshold,
    )
    .action((opts) => run(async () => (await import('./commands/quests.ts')).questUpdate(ctx, opts)));

  quest
    .command('list')
    .description('List quests (public and private) in id order, with their budgets')
    .option('--owner <ownerId>', "only this owner's quests", parseOwnerId)
    .option('--campaign <campaignId>', "only this campaign's quests", parseRowId)
    .option('--limit <n>', `quests per page, 1-${MAX_LIST_LIMIT}`, parseLimit, DEFAULT_LIST_LIMIT)
    .option('--after <questId>', 'continue after this quest id (the "next" of the previous page)', parseRowId)
    .action((opts) => run(async () => (await import('./commands/lists.ts')).questList(ctx, opts)));

  const features = program.command('features').description('Show (default) or switch the quests and campaigns features');
  features
    .command('show', { isDefault: true })
    .description('Show both feature flags')
    .action(() => run(async () => (await import('./commands/features.ts')).featuresShow(ctx)));
  features
    .command('set')
    .description('Switch features on or off, e.g. "features set quests=off campaigns=on"')
    .argument('<assignments...>', `${FEATURES.map((f) => `${f}=on|off`).join(' and/or ')}`)
    .action((assignments: string[], _opts, cmd: Command) => {
      let changes: ReturnType<typeof parseFeatureAssignments<(typeof FEATURES)[number]>>;
      try {
        changes = parseFeatureAssignments(assignments, FEATURES);
      } catch (error) {
        if (error instanceof InvalidArgumentError) usageError(cmd, error.message);
        throw error;
      }
      return run(async () => (await import('./commands/features.ts')).featuresSet(ctx, changes));
    });

  program
    .command('audit')
    .description(
      'Check the ledger: per quest total = remaining + paid out - reversed, per account balance = paid in - reversed, no payout reversed beyond its amount, nothing negative; exit 1 on any violation',
    )
    .action(() => run(async () => (await import('./commands/audit.ts')).auditCommand(ctx)));

  program
    .command('demo')
    .description('Create a demo owner, key, campaign, two quests and three accounts, and print curl commands to try the API')
    .option('--env', 'print only shell `export` lines of the values, for: eval "$(npx quest-admin demo --env)"')
    .action((opts: { env?: boolean }, cmd: Command) => {
      if (opts.env && ctx.json) usageError(cmd, '--env prints shell lines; it cannot be combined with --json');
      return run(async () => (await import('./commands/demo.ts')).demo(ctx, opts));
    });

  registerCreditCommand(program, ctx, run);
  registerPayoutsCommand(program, ctx, run);
  registerRestoreCommand(program, ctx, run);

  const webhooks = program.command('webhooks').description("Owners' webhook endpoints: list, delivery logs, replays");
  webhooks
    .command('list')
    .description('List webhook endpoints (not deleted): owner, URL, events, status (failing: deliveries were given up)')
    .option('--owner <ownerId>', "only this owner's endpoints", parseOwnerId)
    .action((opts) => run(async () => (await import('./commands/webhooks.ts')).webhookList(ctx, opts)));
  webhooks
    .command('deliveries')
    .description("An endpoint's delivery log, newest first: status, attempts, next attempt, last HTTP status, latency, error")
    .requiredOption('--endpoint <id>', 'webhook endpoint id (whe_…)', parseEndpointId)
    .option('--status <status>', 'only pending, delivered or failed deliveries', parseDeliveryStatus)
    .option('--limit <n>', `deliveries to show, 1-${MAX_LIST_LIMIT}`, parseLimit, DEFAULT_LIST_LIMIT)
    .action((opts) => run(async () => (await import('./commands/webhooks.ts')).webhookDeliveries(ctx, opts)));
  webhooks
    .command('replay')
    .description('Deliver again to an endpoint every event it subscribes to created since a time (kept EVENT_RETENTION_DAYS)')
    .requiredOption('--endpoint <id>', 'webhook endpoint id (whe_…)', parseEndpointId)
    .requiredOption('--since <time>', 'ISO 8601 date or date-time, e.g. 2026-03-01T00:00:00Z', parseInstant)
    .action((opts) => run(async () => (await import('./commands/webhooks.ts')).webhookReplay(ctx, opts)));
  webhooks
    .command('local')
    .description(
      'Set up webhooks on this machine: append a new WEBHOOK_SECRET_KEY and WEBHOOK_ALLOW_PRIVATE_URLS=true to .env (settings already given are kept); then restart the API and the worker',
    )
    .action(() => run(async () => (await import('./commands/webhooks.ts')).webhookLocal(ctx)));

  program
    .command('status')
    .description(
      'The worker pool and its work: live members and the partitions each owns, per-partition waiting/active jobs and oldest wait, pending 202s and unfinished batches in PostgreSQL, the last reconciler run',
    )
    .action(() => run(async () => (await import('./commands/status.ts')).statusCommand(ctx)));

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
