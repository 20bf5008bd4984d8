import { listAccountPayouts } from '@quest/db';
import { questIdParamsSchema } from '@quest/domain';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { EXAMPLE_PAYOUT } from '../openapi/examples.ts';
import { documented, errorResponses } from '../openapi/responses.ts';
import { AUTH_ERRORS, apiKeyHeaders } from '../schemas/common.ts';
import { accountPayoutsQuery, accountPayoutsResponse } from '../schemas/payouts.ts';
import type { RouteDeps } from '../types.ts';

/**
 * GET /quests/{questId}/payouts?address=…: every payout of one account on the quest, a page at a
 * time, with what reversals took back from each — how an operator finds the payouts to reverse
 * for a list of addresses (quest-admin payouts reverse --addresses).
 */
export const listPayoutsRoute: FastifyPluginAsyncZod<{ deps: RouteDeps }> = async (app, { deps }) => {
  app.get(
    '/quests/:questId/payouts',
    {
      schema: {
        operationId: 'listAccountPayouts',
        summary: "List an account's payouts on a quest",
        description:
          'Owner-only. The payouts of the account with this pass address on the quest, oldest first, each with `reversed_amount`. ' +
          'An address with no account, or no payouts, answers an empty list.',
        tags: ['quests'],
        security: [{ apiKey: [] }],
        params: questIdParamsSchema,
        querystring: accountPayoutsQuery,
        headers: apiKeyHeaders,
        response: {
          200: documented(accountPayoutsResponse, {
            description: "A page of the account's payouts on the quest.",
            example: { payouts: [{ ...EXAMPLE_PAYOUT, reversed_amount: 0 }] },
          }),
          ...errorResponses({
            400: {
              description: 'VALIDATION_FAILED (bad quest id, address, limit or offset) or QUESTS_DISABLED.',
              codes: ['VALIDATION_FAILED', 'QUESTS_DISABLED'],
            },
            401: AUTH_ERRORS,
            404: { description: 'QUEST_NOT_FOUND.', codes: ['QUEST_NOT_FOUND'] },
          }),
        },
      },
    },
    async (request) => {
      deps.flags.require('quests');
      const { questId } = request.params;
      await deps.auth.authorize(request.headers['x-api-key'], questId);
      const { address, limit, offset } = request.query;
      const payouts = await listAccountPayouts(deps.sql, questId, address, { limit, offset });
      return { payouts: payouts.map((p) => ({ ...p.payout, reversed_amount: p.reversedAmount })) };
    },
  );
};
