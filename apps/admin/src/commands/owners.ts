import { createApiKey, revokeKey } from '@quest/db/keys';
import { createOwner } from '@quest/db/owners';
import type { KeyRef } from '../args.ts';
import type { CommandOutput, Context } from '../context.ts';
import { renderFields } from '../format.ts';

export async function ownerCreate(ctx: Context, opts: { name: string; pass: string }): Promise<CommandOutput> {
  const { owner, apiKey } = await createOwner(await ctx.db(), { name: opts.name, pass: opts.pass });
  return {
    json: { owner: { id: owner.id, name: owner.name, pass: owner.pass }, apiKey },
    text: [
      renderFields('Owner created', [
        ['id', owner.id],
        ['name', owner.name],
        ['pass', owner.pass],
      ]),
      '',
      'API key (shown only now; store it safely):',
      `  ${apiKey}`,
    ].join('\n'),
  };
}

export async function keyCreate(ctx: Context, opts: { owner: string }): Promise<CommandOutput> {
  const { apiKey } = await createApiKey(await ctx.db(), opts.owner);
  return {
    json: { apiKey },
    text: [`API key for ${opts.owner} (shown only now; store it safely):`, `  ${apiKey}`].join('\n'),
  };
}

export async function keyRevoke(ctx: Context, opts: { key: KeyRef }): Promise<CommandOutput> {
  const { key, alreadyRevoked } = await revokeKey(await ctx.db(), opts.key);
  return {
    json: { revoked: true, alreadyRevoked, keyId: key.id, ownerId: key.ownerId, revokedAt: key.revokedAt!.toISOString() },
    text: renderFields(alreadyRevoked ? 'API key already revoked (nothing changed)' : 'API key revoked', [
      ['key id', key.id],
      ['prefix', `${key.prefix}…`],
      ['owner', key.ownerId],
      ['revoked at', key.revokedAt],
    ]),
  };
}
