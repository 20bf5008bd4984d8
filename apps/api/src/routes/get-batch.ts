import { batchIdParamSchema, questIdParamsSchema } from '@quest/domain';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { EXAMPLE_BATCH, EXAMPLE_PAYOUT } from '../openapi/examples.ts';
import { documented, errorResponses } from '../openapi/responses.ts';
import { batchResponse, plainJson } from '../schemas/batches.ts';
import { AUTH_ERRORS, apiKeyHeaders, pageQuery } from '../schemas/common.ts';
import type { RouteDeps } from '../types.ts';

/** GET /quests/{questId}/batches/{batchId}: a batch's progress and a page of its results. */
export const getBatchRoute: FastifyPluginAsyncZod<{ deps: RouteDeps }> = async (app, { deps }) => {
  app.get(
    '/quests/:questId/batches/:batchId',
    {
      serializerCompiler: plainJson,
      schema: {
        operationId: 'getBatch',
        summary: 'Get a batch: status, progress and a page of its results',
        description:
          "The batch's status URL: the `Location` of a 202 from `POST /quests/{questId}/batches`. Poll it until " +
          '`status` is `completed` (every item decided) or `failed` (stopped: send the batch again with the same ' +
          '`Idempotency-Key` to resume); `processed`, `succeeded` and `failed` count the items so far. `results` is ' +
          'one page of item outcomes in the order of the request (`limit` 1–100, `offset`). Only the quest owner ' +
          'reads it.',
        tags: ['batches'],
        security: [{ apiKey: [] }],
        params: questIdParamsSchema.extend({ batchId: batchIdParamSchema }),
        headers: apiKeyHeaders,
        querystring: pageQuery,
        response: {
          200: documented(batchResponse, {
            description: 'The batch, its progress, and the page of results asked for (limit, offset).',
            example: {
              batch: {
                ...EXAMPLE_BATCH,
                status: 'completed',
                processed: 2,
                succeeded: 2,
                failed: 0,
                updated_at: '2026-03-01T12:00:01.456Z',
                completed_at: '2026-03-01T12:00:01.456Z',
                results: [
                  { index: 0, status: 'completed', payout: EXAMPLE_PAYOUT },
                  {
                    index: 1,
                    status: 'completed',
                    payout: { ...EXAMPLE_PAYOUT, id: 'pay_01jf8q4g0x7m3r6v2k9d1n5btc', amount: 40 },
                  },
                ],
              },
            },
          }),
          ...errorResponses({
            400: {
              description: 'VALIDATION_FAILED (bad quest or batch id, limit or offset) or QUESTS_DISABLED.',
              codes: [
                {
                  code: 'VALIDATION_FAILED',
                  message: 'Invalid request: params.batchId: must be a batch id (bat_…)',
                  details: [
                    { location: 'params', path: 'batchId', code: 'invalid_format', message: 'must be a batch id (bat_…)' },
                  ],
                },
                'QUESTS_DISABLED',
              ],
            },
            401: AUTH_ERRORS,
            404: { description: 'QUEST_NOT_FOUND or BATCH_NOT_FOUND.', codes: ['BATCH_NOT_FOUND', 'QUEST_NOT_FOUND'] },
          }),
        },
      },
    },
    async (request) => {
      deps.flags.require('quests');
      const { questId, batchId } = request.params;
      await deps.auth.authorize(request.headers['x-api-key'], questId);
      return { batch: await deps.batches.get(questId, batchId, request.query) };
    },
  );
};
