import { questIdParamsSchema } from '@quest/domain';
import { sendAnswer } from '../commands/answer.ts';
import { keyCaller } from '../commands/caller.ts';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { EXAMPLE_ALLOCATION_ID, EXAMPLE_PAYOUT } from '../openapi/examples.ts';
import { documented, errorResponses, IDEMPOTENT_REPLAYED_HEADER, LOCATION_HEADER } from '../openapi/responses.ts';
import { allocateBody, allocationResponse, payoutResponse } from '../schemas/allocations.ts';
import { AUTH_ERRORS, idempotencyHeaders, validationExample } from '../schemas/common.ts';
import type { RouteDeps } from '../types.ts';

/** POST /quests/{questId}: credit points to one account, decided in the quest's order (commands/credit.ts). */
export const allocateRoute: FastifyPluginAsyncZod<{ deps: RouteDeps }> = async (app, { deps }) => {
  app.post(
    '/quests/:questId',
    {
      schema: {
        operationId: 'allocateQuestPoints',
        summary: 'Allocate quest points',
        description:
          "Allocates points from the quest budget to the account with the given pass address. Decided in order with the quest's other allocations; answered 200 with the payout when decided within ALLOCATION_WAIT_MS, else 202 with a status URL.",
        tags: ['allocations'],
        security: [{ apiKey: [] }],
        params: questIdParamsSchema,
        headers: idempotencyHeaders,
        body: allocateBody,
        response: {
          200: documented(payoutResponse, {
            description: 'Decided and credited: the payout. With `Idempotent-Replayed: true` when it replays an earlier outcome.',
            example: { payout: EXAMPLE_PAYOUT },
            headers: { 'Idempotent-Replayed': IDEMPOTENT_REPLAYED_HEADER },
          }),
          202: documented(allocationResponse, {
            description:
              'Accepted and queued, not decided within ALLOCATION_WAIT_MS: poll the `Location` URL (GET /quests/{questId}/allocations/{allocationId}).',
            example: { allocation: { id: EXAMPLE_ALLOCATION_ID, status: 'pending', updated_at: '2026-03-01T12:00:00.123Z' } },
            headers: { Location: LOCATION_HEADER },
          }),
          ...errorResponses({
            400: {
              description:
                'Invalid request (VALIDATION_FAILED; UNSUPPORTED_MEDIA_TYPE for a body that is not JSON; PAYLOAD_TOO_LARGE beyond the body limit), ' +
                'QUESTS_DISABLED, or rejected at decision time: QUEST_NOT_ACTIVE, ACTION_TYPE_INACTIVE, INSUFFICIENT_POINTS, ACCOUNT_NOT_FOUND, ' +
                'BALANCE_LIMIT_EXCEEDED, IDEMPOTENCY_KEY_REUSED. A rejection replayed for an Idempotency-Key carries `Idempotent-Replayed: true`.',
              codes: [
                validationExample('points', 'Too small: expected number to be >=1'),
                'UNSUPPORTED_MEDIA_TYPE',
                'PAYLOAD_TOO_LARGE',
                'QUESTS_DISABLED',
                'QUEST_NOT_ACTIVE',
                'ACTION_TYPE_INACTIVE',
                'INSUFFICIENT_POINTS',
                'ACCOUNT_NOT_FOUND',
                'BALANCE_LIMIT_EXCEEDED',
                'IDEMPOTENCY_KEY_REUSED',
              ],
              headers: { 'Idempotent-Replayed': IDEMPOTENT_REPLAYED_HEADER },
            },
            401: AUTH_ERRORS,
            404: { description: 'QUEST_NOT_FOUND.', codes: ['QUEST_NOT_FOUND'] },
            503: {
              description:
                'QUEUE_UNAVAILABLE, DATABASE_UNAVAILABLE, or ALLOCATION_FAILED: not applied; retry after Retry-After, with the same Idempotency-Key.',
              codes: ['QUEUE_UNAVAILABLE', 'DATABASE_UNAVAILABLE', 'ALLOCATION_FAILED'],
            },
          }),
        },
      },
    },
    async (request, reply) => {
      const answer = await deps.commands.credit(keyCaller(deps.auth, request, reply), {
        ...request.params,
        ...request.body,
        idempotencyKey: request.headers['idempotency-key'],
      });
      return sendAnswer(reply, answer);
    },
  );
};
