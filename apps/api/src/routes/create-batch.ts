import { DEFAULT_MESSAGE, questIdParamsSchema } from '@quest/domain';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { sendAnswer } from '../commands/answer.ts';
import { keyCaller } from '../commands/caller.ts';
import { EXAMPLE_BATCH, EXAMPLE_PAYOUT } from '../openapi/examples.ts';
import {
  documented,
  errorResponses,
  IDEMPOTENT_REPLAYED_HEADER,
  LOCATION_HEADER,
  PREFERENCE_APPLIED_HEADER,
} from '../openapi/responses.ts';
import { batchBody, batchResponse, plainJson, preferHeader, respondAsync } from '../schemas/batches.ts';
import { AUTH_ERRORS, idempotencyHeaders, validationExample } from '../schemas/common.ts';
import type { RouteDeps } from '../types.ts';

const EXAMPLE_REJECTED = {
  index: 1,
  status: 'rejected',
  address: '0xCC9c7d5148a0EDF1514037c47dfA6f9F0513149f',
  points: 40,
  error: { code: 'ACCOUNT_NOT_FOUND', message: DEFAULT_MESSAGE.ACCOUNT_NOT_FOUND },
} as const;

/** The route's schema: the OpenAPI operation and the validation of its params, headers and body. */
const schema = {
  operationId: 'createBatch',
  summary: 'Credit many accounts in one request',
  description:
    "Every item is validated before anything is enqueued. Items are decided in the order given, and the batch takes its place in the quest's order like one request. Each item gets its own result. 200 when done within BATCH_WAIT_MS, else 202 with a status URL.",
  tags: ['batches'],
  security: [{ apiKey: [] }],
  params: questIdParamsSchema,
  headers: idempotencyHeaders.extend({ prefer: preferHeader }),
  body: batchBody,
  response: {
    200: documented(batchResponse, {
      description:
        'Every item decided within BATCH_WAIT_MS: the batch with all its results. With `Idempotent-Replayed: true` when an earlier request with this Idempotency-Key created the batch.',
      example: {
        batch: {
          ...EXAMPLE_BATCH,
          status: 'completed',
          processed: 2,
          succeeded: 1,
          failed: 1,
          updated_at: '2026-03-01T12:00:01.456Z',
          completed_at: '2026-03-01T12:00:01.456Z',
          results: [{ index: 0, status: 'completed', payout: EXAMPLE_PAYOUT }, EXAMPLE_REJECTED],
        },
      },
      headers: { 'Idempotent-Replayed': IDEMPOTENT_REPLAYED_HEADER },
    }),
    202: documented(batchResponse, {
      description:
        'Accepted, not finished within BATCH_WAIT_MS: the batch without results; poll the `Location` URL (GET /quests/{questId}/batches/{batchId}). ' +
        'With `Idempotent-Replayed: true` when an earlier request with this Idempotency-Key created the batch.',
      example: {
        batch: {
          ...EXAMPLE_BATCH,
          status: 'processing',
          processed: 1,
          succeeded: 1,
          failed: 0,
          updated_at: '2026-03-01T12:00:00.789Z',
          completed_at: null,
        },
      },
      headers: {
        Location: LOCATION_HEADER,
        'Idempotent-Replayed': IDEMPOTENT_REPLAYED_HEADER,
        'Preference-Applied': PREFERENCE_APPLIED_HEADER,
      },
    }),
    ...errorResponses({
      400: {
        description:
          'VALIDATION_FAILED (a malformed item is named by its index in details; UNSUPPORTED_MEDIA_TYPE for a body that is not JSON; ' +
          'PAYLOAD_TOO_LARGE beyond BATCH_BODY_LIMIT_BYTES), BATCH_TOO_LARGE, IDEMPOTENCY_KEY_REUSED (details: `total`, the item count of the batch stored under the key, when known), or QUESTS_DISABLED.',
        codes: [
          validationExample('allocations.3.address', 'must be 0x followed by 40 hexadecimal digits'),
          'UNSUPPORTED_MEDIA_TYPE',
          'PAYLOAD_TOO_LARGE',
          'BATCH_TOO_LARGE',
          'IDEMPOTENCY_KEY_REUSED',
          'QUESTS_DISABLED',
        ],
      },
      401: AUTH_ERRORS,
      404: { description: 'QUEST_NOT_FOUND.', codes: ['QUEST_NOT_FOUND'] },
      503: {
        description:
          'QUEUE_UNAVAILABLE, DATABASE_UNAVAILABLE, or ALLOCATION_FAILED (the batch stopped; retry with the same Idempotency-Key to resume).',
        codes: [
          'QUEUE_UNAVAILABLE',
          'DATABASE_UNAVAILABLE',
          {
            code: 'ALLOCATION_FAILED',
            message:
              'Batch bat_01jf8q4g0x7m3r6v2k9d1n5btb stopped after 5000 of 10000 items; retry with the same Idempotency-Key to resume.',
            details: { batchId: 'bat_01jf8q4g0x7m3r6v2k9d1n5btb', processed: 5000 },
          },
        ],
        headers: { 'Idempotent-Replayed': IDEMPOTENT_REPLAYED_HEADER },
      },
    }),
  },
};

/** POST /quests/{questId}/batches: credit many accounts in one request (commands/batch.ts). */
export const createBatchRoute: FastifyPluginAsyncZod<{ deps: RouteDeps }> = async (app, { deps }) => {
  app.post(
    '/quests/:questId/batches',
    { bodyLimit: deps.config.BATCH_BODY_LIMIT_BYTES, serializerCompiler: plainJson, schema },
    async (request, reply) => {
      const answer = await deps.commands.createBatch(keyCaller(deps.auth, request, reply), {
        questId: request.params.questId,
        items: request.body.allocations,
        idempotencyKey: request.headers['idempotency-key'],
        respondAsync: respondAsync(request.headers.prefer),
      });
      return sendAnswer(reply, answer);
    },
  );
};
