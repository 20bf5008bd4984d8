import { questIdParamsSchema, reversalIdParamSchema } from '@quest/domain';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { EXAMPLE_REVERSAL } from '../openapi/examples.ts';
import { documented, errorResponses } from '../openapi/responses.ts';
import { AUTH_ERRORS, apiKeyHeaders } from '../schemas/common.ts';
import { reversalStatusResponse } from '../schemas/reversals.ts';
import type { RouteDeps } from '../types.ts';

/** GET /quests/{questId}/reversals/{reversalId}: where a reversal stands, from PostgreSQL. */
export const getReversalRoute: FastifyPluginAsyncZod<{ deps: RouteDeps }> = async (app, { deps }) => {
  app.get(
    '/quests/:questId/reversals/:reversalId',
    {
      schema: {
        operationId: 'getReversal',
        summary: 'Get the status of a reversal',
        description:
          'Owner-only. Answers from PostgreSQL: pending, completed with the amount taken back, rejected with the error, or failed.',
        tags: ['reversals'],
        security: [{ apiKey: [] }],
        params: questIdParamsSchema.extend({ reversalId: reversalIdParamSchema }),
        headers: apiKeyHeaders,
        response: {
          200: documented(reversalStatusResponse, {
            description: 'The reversal: pending, completed with what was taken back, rejected or failed with the error.',
            example: { reversal: { ...EXAMPLE_REVERSAL, status: 'completed', updated_at: EXAMPLE_REVERSAL.created_at } },
          }),
          ...errorResponses({
            400: {
              description: 'VALIDATION_FAILED (bad quest or reversal id) or QUESTS_DISABLED.',
              codes: [
                {
                  code: 'VALIDATION_FAILED',
                  message: 'Invalid request: params.reversalId: must be a reversal id (rev_…)',
                  details: [
                    { location: 'params', path: 'reversalId', code: 'invalid_format', message: 'must be a reversal id (rev_…)' },
                  ],
                },
                'QUESTS_DISABLED',
              ],
            },
            401: AUTH_ERRORS,
            404: { description: 'QUEST_NOT_FOUND or REVERSAL_NOT_FOUND.', codes: ['REVERSAL_NOT_FOUND', 'QUEST_NOT_FOUND'] },
          }),
        },
      },
    },
    async (request) => {
      deps.flags.require('quests');
      const { questId, reversalId } = request.params;
      await deps.auth.authorize(request.headers['x-api-key'], questId);
      return { reversal: await deps.reversals.status(questId, reversalId) };
    },
  );
};
