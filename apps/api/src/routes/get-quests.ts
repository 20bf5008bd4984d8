import { listPublicQuests, type PublicQuestRow } from '@quest/db';
import { type PublicQuestView, publicQuestListSchema, publicQuestsQuerySchema } from '@quest/domain';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { EXAMPLE_PUBLIC_QUESTS } from '../openapi/examples.ts';
import { documented, errorResponses } from '../openapi/responses.ts';
import type { ApiDeps } from '../types.ts';
import { publicRead } from '../read-routing.ts';

export function toPublicQuestView(row: PublicQuestRow): PublicQuestView {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    total_points: row.totalPoints,
    expected_points_per_completion: row.expectedPointsPerCompletion,
    start: row.startAt.toISOString(),
    end: row.endAt.toISOString(),
    campaign:
      row.campaignId === null
        ? null
        : { id: row.campaignId, name: row.campaignName ?? '', description: row.campaignDescription ?? '' },
  };
}

/** GET /quests: the public quests, optionally of one owner. No API key needed; one sent is ignored. */
export const getQuestsRoute: FastifyPluginAsyncZod<{ deps: ApiDeps }> = async (app, { deps }) => {
  app.get(
    '/quests',
    {
      schema: {
        operationId: 'listPublicQuests',
        tags: ['quests'],
        summary: 'List public quests',
        description:
          'A JSON array of the public quests in ascending id order, paginated by `limit` (1..100, default 20) and `offset` ' +
          '(default 0). `owner` filters by the pass address of the quest owner, in any letter case. Private quests are never listed.',
        security: [],
        querystring: publicQuestsQuerySchema,
        response: {
          200: documented(publicQuestListSchema, { description: 'Public quests, ascending id.', example: EXAMPLE_PUBLIC_QUESTS }),
          ...errorResponses({
            400: {
              description: 'VALIDATION_FAILED (bad owner address, limit or offset) or QUESTS_DISABLED.',
              codes: [
                {
                  code: 'VALIDATION_FAILED',
                  message: 'Invalid request: querystring.limit: Too big: expected number to be <=100',
                  details: [
                    { location: 'querystring', path: 'limit', code: 'too_big', message: 'Too big: expected number to be <=100' },
                  ],
                },
                'QUESTS_DISABLED',
              ],
            },
          }),
        },
      },
    },
    async (request) => {
      deps.flags.require('quests');
      const { owner, limit, offset } = request.query;
      const rows = await publicRead(deps, (sql) => listPublicQuests(sql, { ownerAddress: owner, limit, offset }));
      return rows.map(toPublicQuestView);
    },
  );
};
