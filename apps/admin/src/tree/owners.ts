import type { Command } from 'commander';
import { DEFAULT_LIST_LIMIT, parseKeyRef, parseLimit, parseKeyId, parseName, parseOwnerId, parsePassAddress } from '../args.ts';
import { MAX_LIST_LIMIT } from '@quest/db/lists';
import type { Context } from '../context.ts';
import type { Run } from './run.ts';

/** `owner` and `key`: quest owners and their API keys. */
export function registerOwnerCommands(program: Command, ctx: Context, run: Run): void {
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
    .action((opts) => run(async () => (await import('../commands/owners.ts')).ownerCreate(ctx, opts)));

  owner
    .command('list')
    .description('List owners in id order, with their active keys and quests')
    .option('--limit <n>', `owners per page, 1-${MAX_LIST_LIMIT}`, parseLimit, DEFAULT_LIST_LIMIT)
    .option('--after <ownerId>', 'continue after this owner id (the "next" of the previous page)', parseOwnerId)
    .action((opts) => run(async () => (await import('../commands/lists.ts')).ownerList(ctx, opts)));

  const key = program.command('key').description('Owner API keys');
  key
    .command('create')
    .description('Issue another API key to an owner (shown only once)')
    .requiredOption('--owner <ownerId>', 'owner id (own_…)', parseOwnerId)
    .action((opts) => run(async () => (await import('../commands/owners.ts')).keyCreate(ctx, opts)));
  key
    .command('revoke')
    .description('Revoke an API key; it stops working at once (revoking it again changes nothing and says so)')
    .requiredOption('--key <key>', 'the key id (key_…, see "key list") or the full key (sk_…)', parseKeyRef)
    .action((opts) => run(async () => (await import('../commands/owners.ts')).keyRevoke(ctx, opts)));
  key
    .command('list')
    .description('List API keys in id order: id, display prefix, owner, created, revoked (never the key itself)')
    .option('--owner <ownerId>', "only this owner's keys", parseOwnerId)
    .option('--limit <n>', `keys per page, 1-${MAX_LIST_LIMIT}`, parseLimit, DEFAULT_LIST_LIMIT)
    .option('--after <keyId>', 'continue after this key id (the "next" of the previous page)', parseKeyId)
    .action((opts) => run(async () => (await import('../commands/lists.ts')).keyList(ctx, opts)));
}
