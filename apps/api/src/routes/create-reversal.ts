import { payoutIdParamSchema, questIdParamsSchema } from '@quest/domain';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { sendAnswer } from '../commands/answer.ts';
import { keyCaller } from '../commands/caller.ts';
import { EXAMPLE_PAYOUT, EXAMPLE_REVERSAL } from '../openapi/examples.ts';
import { documented, errorResponses, IDEMPOTENT_REPLAYED_HEADER, LOCATION_HEADER } from '../openapi/responses.ts';
import { AUTH_ERRORS, idempotencyHeaders, validationExample } from '../schemas/common.ts';
import { reverseBody, reversalResponse, reversalStatusResponse } from '../schemas/reversals.ts';
import type { RouteDeps } from '../types.ts';

/**
 * POST /quests/{questId}/payouts/{payoutId}/reversals: take points back from a payout, decided in
 * the quest's order with its allocations (commands/reversal.ts).
 */
export const createReversalRoute: FastifyPluginAsyncZod<{ deps: RouteDeps }> = async (app, { deps }) => {
  app.post(
    '/quests/:questId/payouts/:payoutId/reversals',
    {
      schema: {
        operationId: 'reversePayout',
        summary: 'Reverse a payout',
        description:
          "Takes points back from a payout of the quest: all of its unreversed remainder, or `points` of it. The quest's `points_remaining` goes up " +
          "by the amount (also after the quest's window ended), the account's balance goes down by it. Decided in order with the quest's allocations " +
          '(a reversal sent after an allocation is decided after it); a payout can be reversed partly several times, never by more than its amount ' +
          'in total. Answered 200 with the reversal when decided within ALLOCATION_WAIT_MS, else 202 with a status URL, like an allocation.',
        tags: ['reversals'],
        security: [{ apiKey: [] }],
        params: questIdParamsSchema.extend({ payoutId: payoutIdParamSchema }),
        headers: idempotencyHeaders,
        body: reverseBody,
        response: {
          200: documented(reversalResponse, {
            description:
              'Decided: the points were taken back. With `Idempotent-Replayed: true` when it replays an earlier outcome.',
            example: { reversal: EXAMPLE_REVERSAL },
            headers: { 'Idempotent-Replayed': IDEMPOTENT_REPLAYED_HEADER },
          }),
          202: documented(reversalStatusResponse, {
            description:
              'Accepted and queued, not decided within ALLOCATION_WAIT_MS: poll the `Location` URL (GET /quests/{questId}/reversals/{reversalId}).',
            example: {
              reversal: {
                id: EXAMPLE_REVERSAL.id,
                status: 'pending',
                payout_id: EXAMPLE_PAYOUT.id,
                quest_id: 7,
                updated_at: '2026-03-02T09:30:00.123Z',
              },
            },
            headers: { Location: LOCATION_HEADER },
          }),
          ...errorResponses({
            400: {
              description:
                'Invalid request (VALIDATION_FAILED; UNSUPPORTED_MEDIA_TYPE for a body that is not JSON; PAYLOAD_TOO_LARGE beyond the body limit), ' +
                'QUESTS_DISABLED, or rejected at decision time: PAYOUT_ALREADY_REVERSED (nothing left to reverse), REVERSAL_EXCEEDS_PAYOUT ' +
                "(more than the payout's unreversed remainder), IDEMPOTENCY_KEY_REUSED. A rejection replayed for an Idempotency-Key carries `Idempotent-Replayed: true`.",
              codes: [
                validationExample('points', 'Too small: expected number to be >=1'),
                'UNSUPPORTED_MEDIA_TYPE',
                'PAYLOAD_TOO_LARGE',
                'QUESTS_DISABLED',
                'PAYOUT_ALREADY_REVERSED',
                'REVERSAL_EXCEEDS_PAYOUT',
                'IDEMPOTENCY_KEY_REUSED',
              ],
              headers: { 'Idempotent-Replayed': IDEMPOTENT_REPLAYED_HEADER },
            },
            401: AUTH_ERRORS,
            404: {
              description: 'QUEST_NOT_FOUND, or PAYOUT_NOT_FOUND: no payout with this id in this quest.',
              codes: ['PAYOUT_NOT_FOUND', 'QUEST_NOT_FOUND'],
            },
            503: {
              description:
                'QUEUE_UNAVAILABLE, DATABASE_UNAVAILABLE, or REVERSAL_FAILED: not applied; retry after Retry-After, with the same Idempotency-Key.',
              codes: ['QUEUE_UNAVAILABLE', 'DATABASE_UNAVAILABLE', 'REVERSAL_FAILED'],
            },
          }),
        },
      },
    },
    async (request, reply) => {
      const answer = await deps.commands.reverse(keyCaller(deps.auth, request, reply), {
        ...request.params,
        ...request.body,
        idempotencyKey: request.headers['idempotency-key'],
      });
      return sendAnswer(reply, answer);
    },
  );
};
