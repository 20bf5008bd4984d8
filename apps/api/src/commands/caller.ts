import type { FastifyReply, FastifyRequest } from 'fastify';
import { apiKeyHeader, type QuestAuthorizer } from '../auth.ts';

/**
 * Who asks for a command, as each entry point knows them: a request with an API key (the JSON
 * routes, and `quest-admin` through them) or a console session. The boundary asks the caller for
 * the owner acting on a quest (or on their own account) and never looks at how that was proven.
 */
export interface Caller {
  /** The owner of `questId` acting on it: refused as the entry point refuses a stranger (an API key: 401, 403 NOT_QUEST_OWNER; a console session: 404). */
  questOwner(questId: number): Promise<string>;
  /** The owner acting on their own account (endpoints, events). */
  owner(): Promise<string>;
  /** Where a 429's rate-limit headers go. */
  headers: { header(name: string, value: string | number): unknown };
  /** The HTTP request's id, carried to the worker's decision log line. */
  requestId: string;
}

/** A JSON route's caller: the request's API key (401 INVALID_API_KEY; 403 NOT_QUEST_OWNER for another owner's quest). */
export function keyCaller(auth: QuestAuthorizer, request: FastifyRequest, reply: FastifyReply): Caller {
  const apiKey = apiKeyHeader(request.headers);
  return {
    questOwner: async (questId) => (await auth.authorize(apiKey, questId)).ownerId,
    owner: async () => (await auth.authenticate(apiKey)).ownerId,
    headers: reply,
    requestId: request.id,
  };
}
