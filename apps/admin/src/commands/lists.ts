import { listAccounts } from '@quest/db/accounts';
import { listCampaigns, listQuests } from '@quest/db/catalog';
import { listApiKeys } from '@quest/db/keys';
import type { ListPage } from '@quest/db/lists';
import { listOwners } from '@quest/db/owners';
import type { CommandOutput, Context } from '../context.ts';
import { type Cell, plural, renderTable } from '../format.ts';

/**
 * The list commands: one page in id order. JSON: `{ <things>: [...], next }` where `next` is the
 * value to pass as `--after` for the following page, or null on the last page.
 */

interface PageOptions<Cursor> {
  limit: number;
  after?: Cursor;
}

function render<T>(
  what: { one: string; many: string; command: string },
  result: ListPage<T>,
  headers: readonly string[],
  row: (item: T) => readonly Cell[],
): string {
  if (result.items.length === 0) return `No ${what.many}.`;
  const lines = [renderTable(headers, result.items.map(row)), ''];
  lines.push(
    result.next === null
      ? `${plural(result.items.length, what.one, what.many)}.`
      : `${plural(result.items.length, what.one, what.many)} shown; more: quest-admin ${what.command} --after ${result.next}`,
  );
  return lines.join('\n');
}

export async function ownerList(ctx: Context, opts: PageOptions<string>): Promise<CommandOutput> {
  const result = await listOwners(await ctx.db(), opts);
  return {
    json: {
      owners: result.items.map((o) => ({
        id: o.id,
        name: o.name,
        pass: o.pass,
        activeKeys: o.activeKeys,
        quests: o.quests,
        createdAt: o.createdAt.toISOString(),
      })),
      next: result.next,
    },
    text: render(
      { one: 'owner', many: 'owners', command: 'owner list' },
      result,
      ['ID', 'NAME', 'PASS', 'ACTIVE KEYS', 'QUESTS', 'CREATED'],
      (o) => [o.id, o.name, o.pass, o.activeKeys, o.quests, o.createdAt],
    ),
  };
}

export async function keyList(ctx: Context, opts: PageOptions<string> & { owner?: string }): Promise<CommandOutput> {
  const result = await listApiKeys(await ctx.db(), { limit: opts.limit, after: opts.after, ownerId: opts.owner });
  return {
    json: {
      keys: result.items.map((k) => ({
        id: k.id,
        ownerId: k.ownerId,
        prefix: k.prefix,
        createdAt: k.createdAt.toISOString(),
        revokedAt: k.revokedAt?.toISOString() ?? null,
      })),
      next: result.next,
    },
    text: render(
      { one: 'API key', many: 'API keys', command: `key list${opts.owner ? ` --owner ${opts.owner}` : ''}` },
      result,
      ['ID', 'PREFIX', 'OWNER', 'CREATED', 'REVOKED'],
      (k) => [k.id, `${k.prefix}…`, k.ownerId, k.createdAt, k.revokedAt],
    ),
  };
}

export async function accountList(ctx: Context, opts: PageOptions<number>): Promise<CommandOutput> {
  const result = await listAccounts(await ctx.db(), opts);
  return {
    json: {
      accounts: result.items.map((a) => ({
        id: a.id,
        pass: a.pass,
        balance: a.balance,
        createdAt: a.createdAt.toISOString(),
      })),
      next: result.next,
    },
    text: render(
      { one: 'account', many: 'accounts', command: 'account list' },
      result,
      ['ID', 'PASS', 'BALANCE', 'CREATED'],
      (a) => [a.id, a.pass, a.balance, a.createdAt],
    ),
  };
}

export async function campaignList(ctx: Context, opts: PageOptions<number>): Promise<CommandOutput> {
  const result = await listCampaigns(await ctx.db(), opts);
  return {
    json: {
      campaigns: result.items.map((c) => ({
        id: c.id,
        name: c.name,
        description: c.description,
        start: c.startAt.toISOString(),
        end: c.endAt.toISOString(),
        isActive: c.isActive,
        externalAppId: c.externalAppId,
        quests: c.quests,
      })),
      next: result.next,
    },
    text: render(
      { one: 'campaign', many: 'campaigns', command: 'campaign list' },
      result,
      ['ID', 'NAME', 'START', 'END', 'ACTIVE', 'QUESTS'],
      (c) => [c.id, c.name, c.startAt, c.endAt, c.isActive, c.quests],
    ),
  };
}

export async function questList(
  ctx: Context,
  opts: PageOptions<number> & { owner?: string; campaign?: number },
): Promise<CommandOutput> {
  const result = await listQuests(await ctx.db(), {
    limit: opts.limit,
    after: opts.after,
    ownerId: opts.owner,
    campaignId: opts.campaign,
  });
  const filters = `${opts.owner ? ` --owner ${opts.owner}` : ''}${opts.campaign ? ` --campaign ${opts.campaign}` : ''}`;
  return {
    json: {
      quests: result.items.map((q) => ({
        id: q.id,
        ownerId: q.ownerId,
        campaignId: q.campaignId,
        name: q.name,
        start: q.startAt.toISOString(),
        end: q.endAt.toISOString(),
        isPublic: q.isPublic,
        actionStatus: q.actionStatus,
        totalPoints: q.totalPoints,
        pointsRemaining: q.pointsRemaining,
      })),
      next: result.next,
    },
    text: render(
      { one: 'quest', many: 'quests', command: `quest list${filters}` },
      result,
      ['ID', 'NAME', 'OWNER', 'CAMPAIGN', 'PUBLIC', 'ACTION', 'REMAINING', 'TOTAL', 'END'],
      (q) => [q.id, q.name, q.ownerId, q.campaignId, q.isPublic, q.actionStatus, q.pointsRemaining, q.totalPoints, q.endAt],
    ),
  };
}
