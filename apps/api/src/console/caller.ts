import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Caller } from '../commands/caller.ts';
import type { ConsoleContext } from './context.ts';
import { questOf } from './own-quest.ts';

/** A console page's caller: the signed-in owner; another owner's quest is answered as not found. */
export function sessionCaller(ctx: ConsoleContext, request: FastifyRequest, reply: FastifyReply): Caller {
  const { ownerId } = ctx.owner(request);
  return {
    questOwner: async (questId) => (await questOf(ctx, ownerId, questId)).ownerId,
    owner: async () => ownerId,
    headers: reply,
    requestId: request.id,
  };
}
