import { payoutIdParamSchema, questIdParamsSchema } from '@quest/domain';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { EXAMPLE_PAYOUT, EXAMPLE_REVERSAL } from '../openapi/examples.ts';
import { documented, errorResponses } from '../openapi/responses.ts';
import { AUTH_ERRORS, apiKeyHeaders } from '../schemas/common.ts';
import { payoutDetailResponse } from '../schemas/reversals.ts';
import type { RouteDeps } from '../types.ts';

/** GET /quests/{questId}/payouts/{payoutId}: one payout with what its reversals took back. */
export const getPayoutRoute: FastifyPluginAsyncZod<{ deps: RouteDeps }> = async (app, { deps }) => {
  app.get(
    '/quests/:questId/payouts/:payoutId',
    {
      schema: {
        operationId: 'getPayout',
        summary: 'Get a payout with its reversals',
        description:
          'Owner-only. The payout as in the quest view, with `reversed_amount` (points its reversals took back, in total) and its reversals in decision order.',
        tags: ['quests'],
        security: [{ apiKey: [] }],
        params: questIdParamsSchema.extend({ payoutId: payoutIdParamSchema }),
        headers: apiKeyHeaders,
        response: {
          200: documented(payoutDetailResponse, {
            description: 'The payout and its reversals.',
            example: { payout: { ...EXAMPLE_PAYOUT, reversed_amount: 100, reversals: [EXAMPLE_REVERSAL] } },
          }),
          ...errorResponses({
            400: {
              description: 'VALIDATION_FAILED (bad quest or payout id) or QUESTS_DISABLED.',
              codes: [
                {
                  code: 'VALIDATION_FAILED',
                  message: 'Invalid request: params.payoutId: must be a payout id (pay_…)',
                  details: [
                    { location: 'params', path: 'payoutId', code: 'invalid_format', message: 'must be a payout id (pay_…)' },
                  ],
                },
                'QUESTS_DISABLED',
              ],
            },
            401: AUTH_ERRORS,
            404: {
              description: 'QUEST_NOT_FOUND, or PAYOUT_NOT_FOUND: no payout with this id in this quest.',
              codes: ['PAYOUT_NOT_FOUND', 'QUEST_NOT_FOUND'],
            },
          }),
        },
      },
    },
    async (request) => {
      deps.flags.require('quests');
      const { questId, payoutId } = request.params;
      await deps.auth.authorize(request.headers['x-api-key'], questId);
      const { payout, reversedAmount, reversals } = await deps.reversals.payout(questId, payoutId);
      return { payout: { ...payout, reversed_amount: reversedAmount, reversals } };
    },
  );
};
