import { getOwnerQuest } from '@quest/db';
import { DomainError } from '@quest/domain';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Caller } from '../commands/caller.ts';
import type { ConsoleContext } from './context.ts';

/** A console page's caller: the signed-in owner; another owner's quest is answered as not found. */
export function sessionCaller(ctx: ConsoleContext, request: FastifyRequest, reply: FastifyReply): Caller {
  const { ownerId } = ctx.owner(request);
  return {
    async questOwner(questId) {
      const quest = await getOwnerQuest(ctx.deps.sql, questId);
      if (!quest || quest.ownerId !== ownerId) throw new DomainError('QUEST_NOT_FOUND');
      return ownerId;
    },
    owner: async () => ownerId,
    headers: reply,
    requestId: request.id,
  };
}
