import { createHash } from 'node:crypto';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  DEFAULT_MESSAGE,
  DomainError,
  type ErrorCode,
  errorCodeSchema,
  idempotentRequestKey,
  newId,
  passAddressLowerSchema,
  passAddressSchema,
  payoutSchema,
  toChecksumAddress,
  questIdParamsSchema,
  allocationIdParamSchema,
  batchIdParamSchema,
  INT32_MAX,
  intQueryParam,
} from '@quest/domain';
import {
  type BatchRow,
  createOrGetBatch,
  getAllocationStatus,
  getBatch,
  getBatchResults,
  recordPendingAllocation,
} from '@quest/db';
import {
  documented,
  type ErrorExample,
  EXAMPLE_PAYOUT,
  errorResponses,
  IDEMPOTENT_REPLAYED_HEADER,
  LOCATION_HEADER,
  PREFERENCE_APPLIED_HEADER,
} from '../openapi.ts';
import { countAllocation, countBatchItems } from '../metrics.ts';
import { IdempotencyGuard } from '../idempotency-guard.ts';
import type { AllocationRoutesOptions } from '../types.ts';

/**
 * The write side of the API: POST /quests/:questId (one allocation), its status route, and the
 * batch routes. Routes validate and authorize here; decisions are made by the worker pool at
 * decision time (window, action type, budget, account) and come back through the queue.
 */

const questParams = questIdParamsSchema;
const idempotencyHeaders = z.object({
  'idempotency-key': z.string().min(1).max(255).optional().meta({
    example: 'order-1234',
    description:
      'Optional. The same owner + quest + key gets the original outcome, never a second credit. Kept as long as the outcome (at least 24 h; in practice forever).',
  }),
  'x-api-key': z.string().optional().meta({ description: 'API key of the quest owner (sk_…).' }),
});
/** RFC 7240 `Prefer: respond-async` on a batch POST: answer 202 once the batch is queued, without waiting for it. */
const batchHeaders = idempotencyHeaders.extend({
  prefer: z.string().max(200).optional().meta({
    example: 'respond-async',
    description:
      "Optional. `respond-async`: answer 202 as soon as the batch is queued (its place in the quest's order is then fixed) instead of waiting up to BATCH_WAIT_MS; the answer carries `Preference-Applied: respond-async`. A client keeping several batches of one quest in flight in order sends each after the previous one was answered.",
  }),
});
const respondAsync = (prefer: string | undefined) =>
  prefer?.split(',').some((p) => p.trim().toLowerCase() === 'respond-async') === true;
const points = z
  .number()
  .int()
  .min(1)
  .max(Number.MAX_SAFE_INTEGER)
  .meta({ description: 'Points to allocate: a positive integer.' });

const count = (description: string) => z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).meta({ description });
const timestamp = (description: string, example: string) => z.iso.datetime().meta({ description, example });

const allocateBody = z
  .strictObject({ points, address: passAddressSchema })
  .meta({ example: { points: 250, address: EXAMPLE_PAYOUT.account.pass } });
const errorView = z
  .object({
    code: errorCodeSchema,
    message: z.string().meta({ example: DEFAULT_MESSAGE.INSUFFICIENT_POINTS }),
  })
  .meta({
    id: 'OutcomeError',
    description:
      'Why an allocation or batch item was not applied: a decision (QUEST_NOT_ACTIVE, ACTION_TYPE_INACTIVE, INSUFFICIENT_POINTS, ' +
      'ACCOUNT_NOT_FOUND, BALANCE_LIMIT_EXCEEDED, IDEMPOTENCY_KEY_REUSED) or ALLOCATION_FAILED (given up; nothing applied).',
  });
const allocationView = z
  .object({
    id: z.string().meta({
      description: 'Allocation id: the request key (`alc_…`), or `<batch id>:<index>` for a batch item.',
      example: 'alc_01jf8q4g0x7m3r6v2k9d1n5bta',
    }),
    status: z.enum(['pending', 'completed', 'rejected', 'failed']).meta({
      description:
        'pending: accepted, not decided yet; completed: credited (see payout); rejected: refused by a decision (see error); ' +
        'failed: given up, nothing applied, a retry with the same Idempotency-Key is safe (see error).',
    }),
    payout: payoutSchema.optional().meta({ description: 'When completed.' }),
    error: errorView.optional().meta({ description: 'When rejected or failed.' }),
    updated_at: timestamp(
      'When this allocation was last touched: decided, accepted, re-driven or given up (ISO 8601 UTC).',
      '2026-03-01T12:00:00.123Z',
    ),
  })
  .meta({ id: 'Allocation', description: 'An allocation and where it stands.' });

const batchItem = z.strictObject({ address: passAddressLowerSchema, points });
const batchBody = z
  .strictObject({
    allocations: z
      .array(batchItem)
      .min(1)
      .meta({ description: 'Allocations, decided in this order. At most BATCH_MAX_ITEMS (default 10,000).' }),
  })
  .meta({
    example: {
      allocations: [
        { address: EXAMPLE_PAYOUT.account.pass, points: 250 },
        { address: '0xCC9c7d5148a0EDF1514037c47dfA6f9F0513149f', points: 40 },
      ],
    },
  });
const batchResult = z
  .object({
    index: z.number().int().min(0).max(INT32_MAX).meta({ description: "The item's index in the request's `allocations`." }),
    status: z.enum(['completed', 'rejected']),
    payout: payoutSchema.optional().meta({ description: 'When completed.' }),
    address: z.string().optional().meta({
      description: "When rejected: the item's pass address (EIP-55 checksum form).",
      example: '0x52908400098527886E0F7030069857D2E4169EE7',
    }),
    points: points.optional().meta({ description: "When rejected: the item's points.", example: 250 }),
    error: errorView.optional().meta({ description: 'When rejected.' }),
  })
  .meta({ id: 'BatchResult', description: 'The outcome of one batch item.' });
const batchView = z
  .object({
    id: z.string().meta({ description: 'Batch id (`bat_…`).', example: 'bat_01jf8q4g0x7m3r6v2k9d1n5btb' }),
    status: z.enum(['pending', 'processing', 'completed', 'failed']).meta({
      description:
        'pending: accepted, not started; processing: items are being decided; completed: every item decided; ' +
        'failed: stopped (retry with the same Idempotency-Key to resume).',
    }),
    total: count('Items in the batch.'),
    processed: count('Items decided so far.'),
    succeeded: count('Items credited.'),
    failed: count('Items rejected.'),
    created_at: timestamp('When the batch was accepted (ISO 8601 UTC).', '2026-03-01T12:00:00.123Z'),
    updated_at: timestamp(
      'When the batch last made progress or was last (re-)driven (ISO 8601 UTC).',
      '2026-03-01T12:00:01.456Z',
    ),
    completed_at: z.iso
      .datetime()
      .nullable()
      .meta({ description: 'When every item was decided (ISO 8601 UTC); null until then.', example: '2026-03-01T12:00:01.456Z' }),
    results: z.array(batchResult).optional().meta({
      description:
        'Item outcomes in index order: all of them in the answer to POST when completed; a page (limit, offset) in GET.',
    }),
  })
  .meta({ id: 'Batch', description: 'A batch: its progress and, when asked for, its item outcomes.' });

const payoutResponse = z
  .object({ payout: payoutSchema })
  .meta({ id: 'PayoutResponse', description: 'A decided allocation: the payout.' });
const allocationResponse = z.object({ allocation: allocationView }).meta({ id: 'AllocationResponse' });
const batchResponse = z.object({ batch: batchView }).meta({ id: 'BatchResponse' });

const EXAMPLE_BATCH = {
  id: 'bat_01jf8q4g0x7m3r6v2k9d1n5btb',
  total: 2,
  created_at: '2026-03-01T12:00:00.123Z',
};

/** The errors of the two POST routes: how the request can fail before, at and after the decision. */
const validationExample = (path: string, message: string): ErrorExample => ({
  code: 'VALIDATION_FAILED',
  message: `Invalid request: body.${path}: ${message}`,
  details: [{ location: 'body', path, code: 'invalid_format', message }],
});
const AUTH_ERRORS = {
  description: 'INVALID_API_KEY or NOT_QUEST_OWNER.',
  codes: ['INVALID_API_KEY', 'NOT_QUEST_OWNER'],
} as const;

// Digits only, like every other route's query parameters (intQueryParam), never z.coerce.
const pageQuery = z.object({
  limit: intQueryParam({ default: 100, min: 1, max: 1000, description: 'Results per page (1..1000, default 100).' }),
  offset: intQueryParam({ default: 0, min: 0, max: INT32_MAX, description: 'Results to skip (default 0).' }),
});

const rejection = (code: string) => ({ code: code as ErrorCode, message: DEFAULT_MESSAGE[code as ErrorCode] ?? code });

function batchDigest(items: readonly { address: string; points: number }[]): string {
  const h = createHash('sha256');
  for (const i of items) h.update(`${i.address}:${i.points};`);
  return h.digest('hex');
}

/** IDEMPOTENCY_KEY_REUSED for a batch, telling the size of the batch stored under the key (a client re-cutting a file can name it). */
const keyReused = (stored: BatchRow | undefined) =>
  new DomainError('IDEMPOTENCY_KEY_REUSED', undefined, stored ? { total: stored.total } : undefined);

function batchSummary(row: BatchRow) {
  return {
    id: row.id,
    status: row.status,
    total: row.total,
    processed: row.processed,
    succeeded: row.succeeded,
    failed: row.failed,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
    completed_at: row.completed_at?.toISOString() ?? null,
  };
}

const toResultView = (r: Awaited<ReturnType<typeof getBatchResults>>[number]) =>
  r.status === 'completed'
    ? { index: r.index, status: r.status, payout: r.payout }
    : {
        index: r.index,
        status: r.status,
        address: toChecksumAddress(r.address) ?? r.address,
        points: r.points,
        error: rejection(r.code),
      };

/**
 * Batch answers carry up to 10,000 results: serialize them with plain JSON.stringify instead of the
 * type provider's per-field zod encoding (~9 µs per result). Their shape is still the documented
 * one: the tests check every answer against the OpenAPI document.
 */
const plainJson = () => (data: unknown) => JSON.stringify(data);

export const allocationRoutes: FastifyPluginAsyncZod<AllocationRoutesOptions> = async (app, { deps, config }) => {
  const { sql, allocator, flags, auth, idempotency, ownerItems } = deps;

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
        params: questParams,
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
            example: {
              allocation: { id: 'alc_01jf8q4g0x7m3r6v2k9d1n5bta', status: 'pending', updated_at: '2026-03-01T12:00:00.123Z' },
            },
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
      flags.require('quests');
      const { questId } = request.params;
      const { ownerId } = await auth.authorize(request.headers['x-api-key'], questId);
      await ownerItems.charge(reply, ownerId, 1);
      const idem = request.headers['idempotency-key'];
      const key = idem ? idempotentRequestKey(ownerId, questId, idem, 'alc') : newId('alc');
      const { points, address } = request.body;
      if (idem && idempotency) await idempotency.claim(key, IdempotencyGuard.digest([address.toLowerCase(), points]));
      const result = await allocator.allocate({ key, questId, points, address, requestId: request.id });
      countAllocation(result);
      // A generated key is never replayed but by a redelivered job: only a client's key makes a replay.
      if (idem && 'replayed' in result && result.replayed) reply.header('idempotent-replayed', 'true');
      switch (result.status) {
        case 'completed':
          return reply.code(200).send({ payout: result.payout });
        case 'rejected':
          throw new DomainError(result.code);
        case 'failed':
          throw new DomainError('ALLOCATION_FAILED');
        case 'pending': {
          await recordPendingAllocation(sql, {
            questId,
            key,
            address,
            points,
            enqueuedAt: result.enqueuedAt,
            jobId: result.jobId,
          });
          return reply
            .code(202)
            .header('location', `/quests/${questId}/allocations/${key}`)
            .send({ allocation: { id: key, status: 'pending', updated_at: new Date(result.enqueuedAt).toISOString() } });
        }
      }
    },
  );

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
        params: questParams.extend({ allocationId: allocationIdParamSchema }),
        headers: idempotencyHeaders.pick({ 'x-api-key': true }),
        response: {
          200: documented(allocationResponse, {
            description: 'The allocation: pending, completed with its payout, rejected or failed with the error.',
            example: {
              allocation: {
                id: 'alc_01jf8q4g0x7m3r6v2k9d1n5bta',
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
      flags.require('quests');
      const { questId, allocationId } = request.params;
      await auth.authorize(request.headers['x-api-key'], questId);
      const status = await getAllocationStatus(sql, questId, allocationId);
      if (!status) throw new DomainError('ALLOCATION_NOT_FOUND');
      const base = { id: allocationId, status: status.status, updated_at: status.updatedAt.toISOString() };
      switch (status.status) {
        case 'completed':
          return { allocation: { ...base, payout: status.payout } };
        case 'rejected':
        case 'failed':
          return { allocation: { ...base, error: rejection(status.code) } };
        case 'pending':
          return { allocation: base };
      }
    },
  );

  app.post(
    '/quests/:questId/batches',
    {
      bodyLimit: config.BATCH_BODY_LIMIT_BYTES,
      serializerCompiler: plainJson,
      schema: {
        operationId: 'createBatch',
        summary: 'Credit many accounts in one request',
        description:
          "Every item is validated before anything is enqueued. Items are decided in the order given, and the batch takes its place in the quest's order like one request. Each item gets its own result. 200 when done within BATCH_WAIT_MS, else 202 with a status URL.",
        tags: ['batches'],
        security: [{ apiKey: [] }],
        params: questParams,
        headers: batchHeaders,
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
                results: [
                  { index: 0, status: 'completed', payout: EXAMPLE_PAYOUT },
                  {
                    index: 1,
                    status: 'rejected',
                    address: '0xCC9c7d5148a0EDF1514037c47dfA6f9F0513149f',
                    points: 40,
                    error: { code: 'ACCOUNT_NOT_FOUND', message: DEFAULT_MESSAGE.ACCOUNT_NOT_FOUND },
                  },
                ],
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
      },
    },
    async (request, reply) => {
      flags.require('quests');
      const { questId } = request.params;
      const { ownerId } = await auth.authorize(request.headers['x-api-key'], questId);
      const items = request.body.allocations;
      if (items.length > config.BATCH_MAX_ITEMS) {
        throw new DomainError(
          'BATCH_TOO_LARGE',
          `A batch holds at most ${config.BATCH_MAX_ITEMS} allocations; this one has ${items.length}.`,
        );
      }
      await ownerItems.charge(reply, ownerId, items.length);
      const idem = request.headers['idempotency-key'];
      const batchId = idem ? idempotentRequestKey(ownerId, questId, idem, 'bat') : newId('bat');
      const digest = batchDigest(items);
      if (idem && idempotency) {
        try {
          await idempotency.claim(batchId, digest);
        } catch (error) {
          if (!(error instanceof DomainError && error.code === 'IDEMPOTENCY_KEY_REUSED')) throw error;
          throw keyReused(await getBatch(sql, questId, batchId));
        }
      }
      const { row, created } = await createOrGetBatch(sql, {
        id: batchId,
        questId,
        ownerId,
        digest,
        addresses: items.map((i) => i.address),
        points: items.map((i) => i.points),
      });
      if (row.items_digest !== digest) throw keyReused(row);
      // An earlier request with this Idempotency-Key created the batch: this answer reports it.
      if (!created) reply.header('idempotent-replayed', 'true');

      let final: BatchRow | undefined = row.status === 'completed' ? row : undefined;
      let current: BatchRow | undefined;
      if (!final) {
        // A failed batch resumes from its last committed chunk; concurrent retries share one job.
        const async = respondAsync(request.headers.prefer);
        if (async) reply.header('preference-applied', 'respond-async');
        const run = await allocator.runBatch({ batchId, questId }, { waitMs: async ? 0 : config.BATCH_WAIT_MS });
        current = await getBatch(sql, questId, batchId);
        // Without a reply (it timed out, was lost, or another request's job carried the batch),
        // the row is the truth: completed is final. A failed row may be the previous attempt's,
        // which this request's job is about to resume, so only the job's own answer says failed.
        if (run.status !== 'pending' || current?.status === 'completed') final = current;
      }
      countBatchItems(final ?? row);
      if (final?.status === 'completed') {
        const results = await getBatchResults(sql, batchId, final.total, 0);
        return reply.code(200).send({ batch: { ...batchSummary(final), results: results.map(toResultView) } });
      }
      if (final?.status === 'failed') {
        throw new DomainError(
          'ALLOCATION_FAILED',
          `Batch ${batchId} stopped after ${final.processed} of ${final.total} items; retry with the same Idempotency-Key to resume.`,
          {
            batchId,
            processed: final.processed,
          },
        );
      }
      return reply
        .code(202)
        .header('location', `/quests/${questId}/batches/${batchId}`)
        .send({ batch: batchSummary(current ?? row) });
    },
  );

  app.get(
    '/quests/:questId/batches/:batchId',
    {
      serializerCompiler: plainJson,
      schema: {
        operationId: 'getBatch',
        summary: 'Get a batch: status, progress and a page of its results',
        tags: ['batches'],
        security: [{ apiKey: [] }],
        params: questParams.extend({ batchId: batchIdParamSchema }),
        headers: idempotencyHeaders.pick({ 'x-api-key': true }),
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
      flags.require('quests');
      const { questId, batchId } = request.params;
      await auth.authorize(request.headers['x-api-key'], questId);
      const row = await getBatch(sql, questId, batchId);
      if (!row) throw new DomainError('BATCH_NOT_FOUND');
      const results = await getBatchResults(sql, batchId, request.query.limit, request.query.offset);
      return { batch: { ...batchSummary(row), results: results.map(toResultView) } };
    },
  );
};
