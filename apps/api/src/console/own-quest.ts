import { getOwnerQuest, type OwnerQuestRow } from '@quest/db';
import { DomainError } from '@quest/domain';
import type { FastifyRequest } from 'fastify';
import type { ConsoleContext } from './context.ts';
import { pathQuestId } from './ids.ts';

/** The quest if it is `ownerId`'s; another owner's quest is answered as not found. */
export async function questOf(ctx: ConsoleContext, ownerId: string, questId: number): Promise<OwnerQuestRow> {
  const quest = await getOwnerQuest(ctx.deps.sql, questId);
  if (!quest || quest.ownerId !== ownerId) throw new DomainError('QUEST_NOT_FOUND');
  return quest;
}

/** The path's quest if the signed-in owner's; another owner's quest is answered as not found. */
export function ownQuest(ctx: ConsoleContext, request: FastifyRequest): Promise<OwnerQuestRow> {
  return questOf(ctx, ctx.owner(request).ownerId, pathQuestId(request));
}

/** What a quest page's query asks for: the chart period and the address searched (trimmed; '' for none). */
export function questQuery(request: FastifyRequest): { period?: string; search: string } {
  const query = (request.query ?? {}) as { period?: unknown; address?: unknown };
  return {
    ...(typeof query.period === 'string' ? { period: query.period } : {}),
    search: typeof query.address === 'string' ? query.address.trim() : '',
  };
}
