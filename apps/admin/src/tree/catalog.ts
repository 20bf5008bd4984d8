import type { Command } from 'commander';
import {
  DEFAULT_LIST_LIMIT,
  parseActionStatus,
  parseAfterInt,
  parseLimit,
  parseInstant,
  parseName,
  parseNonNegativeInt,
  parseOwnerId,
  parsePassAddress,
  parseRowId,
  parseThreshold,
} from '../args.ts';
import { MAX_LIST_LIMIT } from '@quest/db/lists';
import { checkWindow } from '../usage.ts';
import type { Context } from '../context.ts';
import type { Run } from './run.ts';

/** `account`: the accounts points are paid to. */
function registerAccountCommands(program: Command, ctx: Context, run: Run): void {
  const account = program.command('account').description('Accounts that receive points');
  account
    .command('create')
    .description('Create one account')
    .requiredOption('--pass <address>', 'pass address, 0x + 40 hex digits in any case (stored in EIP-55 form)', parsePassAddress)
    .action((opts) => run(async () => (await import('../commands/accounts.ts')).accountCreate(ctx, opts)));
  account
    .command('import')
    .description('Create accounts in bulk from a CSV file with a "pass" header; existing ones are skipped')
    .requiredOption('--file <path>', 'CSV file: header line "pass", then one address per line')
    .action((opts) => run(async () => (await import('../commands/accounts.ts')).accountImport(ctx, opts)));

  account
    .command('list')
    .description('List accounts in id order, with their balances')
    .option('--limit <n>', `accounts per page, 1-${MAX_LIST_LIMIT}`, parseLimit, DEFAULT_LIST_LIMIT)
    .option('--after <accountId>', 'continue after this account id (the "next" of the previous page)', parseAfterInt)
    .action((opts) => run(async () => (await import('../commands/lists.ts')).accountList(ctx, opts)));
}

/** `campaign`: groups of quests with a window of their own. */
function registerCampaignCommands(program: Command, ctx: Context, run: Run): void {
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
      return run(async () => (await import('../commands/quests.ts')).campaignCreate(ctx, opts));
    });

  campaign
    .command('list')
    .description('List campaigns in id order, with their number of quests')
    .option('--limit <n>', `campaigns per page, 1-${MAX_LIST_LIMIT}`, parseLimit, DEFAULT_LIST_LIMIT)
    .option('--after <campaignId>', 'continue after this campaign id (the "next" of the previous page)', parseRowId)
    .action((opts) => run(async () => (await import('../commands/lists.ts')).campaignList(ctx, opts)));
}

/** `quest`: points budgets, their windows and settings. */
function registerQuestCommands(program: Command, ctx: Context, run: Run): void {
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
      return run(async () => (await import('../commands/quests.ts')).questCreate(ctx, opts));
    });
  quest
    .command('action')
    .description("Switch a quest's action type")
    .requiredOption('--id <questId>', 'quest id', parseRowId)
    .requiredOption('--status <status>', 'active or deactivated', parseActionStatus)
    .action((opts) => run(async () => (await import('../commands/quests.ts')).questAction(ctx, opts)));
  quest
    .command('update')
    .description("Change a quest's settings")
    .requiredOption('--id <questId>', 'quest id', parseRowId)
    .requiredOption(
      '--budget-low-threshold <points>',
      'send quest.budget_low when points remaining fall to this or below; "default": 10 % of the total',
      parseThreshold,
    )
    .action((opts) => run(async () => (await import('../commands/quests.ts')).questUpdate(ctx, opts)));

  quest
    .command('list')
    .description('List quests (public and private) in id order, with their budgets')
    .option('--owner <ownerId>', "only this owner's quests", parseOwnerId)
    .option('--campaign <campaignId>', "only this campaign's quests", parseRowId)
    .option('--limit <n>', `quests per page, 1-${MAX_LIST_LIMIT}`, parseLimit, DEFAULT_LIST_LIMIT)
    .option('--after <questId>', 'continue after this quest id (the "next" of the previous page)', parseRowId)
    .action((opts) => run(async () => (await import('../commands/lists.ts')).questList(ctx, opts)));
}

/** `account`, `campaign` and `quest`: what points are paid to and from. */
export function registerCatalogCommands(program: Command, ctx: Context, run: Run): void {
  registerAccountCommands(program, ctx, run);
  registerCampaignCommands(program, ctx, run);
  registerQuestCommands(program, ctx, run);
}
