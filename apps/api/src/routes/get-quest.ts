import { getQuestDetail, listQuestPayouts, type PayoutRow, type QuestDetailRow } from '@quest/db';
import {
  DomainError,
  isQuestActive,
  type QuestDetailView,
  questDetailQuerySchema,
  questDetailViewSchema,
  questIdParamsSchema,
} from '@quest/domain';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { apiKeyHeader } from '../auth.ts';
import { EXAMPLE_QUEST_DETAIL } from '../openapi/examples.ts';
import { documented, errorResponses } from '../openapi/responses.ts';
import type { RouteDeps } from '../types.ts';

export function toQuestDetailView(quest: QuestDetailRow, payouts: PayoutRow[], now: Date): QuestDetailView {
  return {
    id: quest.id,
    name: quest.name,
    description: quest.description,
    total_points: quest.totalPoints,
    points_remaining: quest.pointsRemaining,
    start: quest.startAt.toISOString(),
    end: quest.endAt.toISOString(),
    is_active: isQuestActive(quest, now),
    payouts: payouts.map((p) => ({
      id: p.id,
      amount: p.amount,
      created_at: p.createdAt.toISOString(),
      account: { pass: p.pass },
    })),
  };
}

/** GET /quests/{questId}: the owner's view of a quest with a page of its payouts. */
export const getQuestRoute: FastifyPluginAsyncZod<{ deps: RouteDeps }> = async (app, { deps }) => {
  app.get(
    '/quests/:questId',
    {
      schema: {
        operationId: 'getQuest',
        tags: ['quests'],
        summary: 'Get quest details',
        description:
          'Owner only. Payouts are newest first (decision order); `limit` 1..100 (default 20), `offset` ≥ 0 (default 0). ' +
          'Checks run in this order: request validation, quests feature flag, API key, quest existence, ownership.',
        security: [{ apiKey: [] }],
        params: questIdParamsSchema,
        querystring: questDetailQuerySchema,
        response: {
          200: documented(questDetailViewSchema, {
            description: 'The quest and a page of its payouts, newest first.',
            example: EXAMPLE_QUEST_DETAIL,
          }),
          ...errorResponses({
            400: {
              description: 'VALIDATION_FAILED (bad quest id, limit or offset) or QUESTS_DISABLED.',
              codes: [
                {
                  code: 'VALIDATION_FAILED',
                  message: 'Invalid request: querystring.offset: must be a non-negative integer',
                  details: [
                    {
                      location: 'querystring',
                      path: 'offset',
                      code: 'invalid_format',
                      message: 'must be a non-negative integer',
                    },
                  ],
                },
                'QUESTS_DISABLED',
              ],
            },
            401: {
              description: 'INVALID_API_KEY (missing, malformed, unknown or revoked key) or NOT_QUEST_OWNER.',
              codes: ['INVALID_API_KEY', 'NOT_QUEST_OWNER'],
            },
            404: { description: 'QUEST_NOT_FOUND.', codes: ['QUEST_NOT_FOUND'] },
          }),
        },
      },
    },
    async (request) => {
      deps.flags.require('quests');
      const { questId } = request.params;
      await deps.auth.authorize(apiKeyHeader(request.headers), questId);
      const [quest, payouts] = await Promise.all([
        getQuestDetail(deps.sql, questId),
        listQuestPayouts(deps.sql, questId, request.query),
      ]);
      if (!quest) throw new DomainError('QUEST_NOT_FOUND');
      return toQuestDetailView(quest, payouts, new Date());
    },
  );
};
