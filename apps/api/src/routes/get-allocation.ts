import { allocationIdParamSchema, questIdParamsSchema } from '@quest/domain';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { EXAMPLE_ALLOCATION_ID, EXAMPLE_PAYOUT } from '../openapi/examples.ts';
import { documented, errorResponses } from '../openapi/responses.ts';
import { allocationResponse } from '../schemas/allocations.ts';
import { AUTH_ERRORS, apiKeyHeaders } from '../schemas/common.ts';
import type { RouteDeps } from '../types.ts';

/** GET /quests/{questId}/allocations/{allocationId}: where an allocation stands, from PostgreSQL. */
export const getAllocationRoute: FastifyPluginAsyncZod<{ deps: RouteDeps }> = async (app, { deps }) => {
  app.get(
    '/quests/:questId/allocations/:allocationId',
    {
      schema: {
        operationId: 'getAllocation',
        summary: 'Get the status of an allocation',
        description:
          'Owner-only. Answers from PostgreSQL: pending, completed with the payout, rejected with the error, or failed.',
        tags: ['allocations'],
        security: [{ apiKey: [] }],
        params: questIdParamsSchema.extend({ allocationId: allocationIdParamSchema }),
        headers: apiKeyHeaders,
        response: {
          200: documented(allocationResponse, {
            description: 'The allocation: pending, completed with its payout, rejected or failed with the error.',
            example: {
              allocation: {
                id: EXAMPLE_ALLOCATION_ID,
                status: 'completed',
                payout: EXAMPLE_PAYOUT,
                updated_at: '2026-03-01T12:00:00.123Z',
              },
            },
          }),
          ...errorResponses({
            400: {
              description: 'VALIDATION_FAILED (bad quest or allocation id) or QUESTS_DISABLED.',
              codes: [
                {
                  code: 'VALIDATION_FAILED',
                  message: 'Invalid request: params.allocationId: must be an allocation id (alc_… or <batch id>:<index>)',
                  details: [
                    {
                      location: 'params',
                      path: 'allocationId',
                      code: 'invalid_format',
                      message: 'must be an allocation id (alc_… or <batch id>:<index>)',
                    },
                  ],
                },
                'QUESTS_DISABLED',
              ],
            },
            401: AUTH_ERRORS,
            404: { description: 'QUEST_NOT_FOUND or ALLOCATION_NOT_FOUND.', codes: ['ALLOCATION_NOT_FOUND', 'QUEST_NOT_FOUND'] },
          }),
        },
      },
    },
    async (request) => {
      deps.flags.require('quests');
      const { questId, allocationId } = request.params;
      await deps.auth.authorize(request.headers['x-api-key'], questId);
      return { allocation: await deps.allocations.status(questId, allocationId) };
    },
  );
};
