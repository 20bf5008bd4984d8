import { createHash } from 'node:crypto';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  DEFAULT_MESSAGE,
  DomainError,
  type ErrorCode,
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
import { errorResponses } from '../errors.ts';
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
    description:
      'Optional. The same owner + quest + key gets the original outcome, never a second credit. Kept as long as the outcome (at least 24 h; in practice forever).',
  }),
  'x-api-key': z.string().optional().meta({ description: 'API key of the quest owner (sk_…).' }),
});
const points = z
  .number()
  .int()
  .min(1)
  .max(Number.MAX_SAFE_INTEGER)
  .meta({ description: 'Points to allocate: a positive integer.' });

const allocateBody = z.strictObject({ points, address: passAddressSchema });
const errorView = z.object({ code: z.string(), message: z.string() });
const allocationView = z.object({
  id: z.string().meta({ description: 'Allocation id: the request key (`alc_…`).' }),
  status: z.enum(['pending', 'completed', 'rejected', 'failed']),
  payout: payoutSchema.optional(),
  error: errorView.optional(),
  updated_at: z.string().meta({
    description: 'When this allocation was last touched: decided, accepted, re-driven or given up (ISO 8601 UTC).',
  }),
});

const batchItem = z.strictObject({ address: passAddressLowerSchema, points });
const batchBody = z.strictObject({
  allocations: z
    .array(batchItem)
    .min(1)
    .meta({ description: 'Allocations, decided in this order. At most BATCH_MAX_ITEMS (default 10,000).' }),
});
const batchResult = z.object({
  index: z.number().int(),
  status: z.enum(['completed', 'rejected']),
  payout: payoutSchema.optional(),
  address: z.string().optional(),
  points: z.number().int().optional(),
  error: errorView.optional(),
});
const batchView = z.object({
  id: z.string(),
  status: z.enum(['pending', 'processing', 'completed', 'failed']),
  total: z.number().int(),
  processed: z.number().int(),
  succeeded: z.number().int(),
  failed: z.number().int(),
  created_at: z.string(),
  updated_at: z.string().meta({ description: 'When the batch last made progress or was last (re-)driven (ISO 8601 UTC).' }),
  completed_at: z.string().nullable(),
  results: z.array(batchResult).optional(),
});
// Digits only, like every other route's query parameters (intQueryParam), never z.coerce.
const pageQuery = z.object({
  limit: intQueryParam({ default: 100, min: 1, max: 1000, description: 'Results per page (1..1000, default 100).' }),
  offset: intQueryParam({ default: 0, min: 0, max: INT32_MAX, description: 'Results to skip (default 0).' }),
});

const rejection = (code: string) => ({ code, message: DEFAULT_MESSAGE[code as ErrorCode] ?? code });

function batchDigest(items: readonly { address: string; points: number }[]): string {
  const h = createHash('sha256');
  for (const i of items) h.update(`${i.address}:${i.points};`);
  return h.digest('hex');
}

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
          200: z.object({ payout: payoutSchema }),
          202: z.object({ allocation: allocationView }),
          ...errorResponses({
            400: 'Invalid request (VALIDATION_FAILED; UNSUPPORTED_MEDIA_TYPE for a body that is not JSON; PAYLOAD_TOO_LARGE beyond the body limit), quests disabled, or rejected at decision time: QUEST_NOT_ACTIVE, ACTION_TYPE_INACTIVE, INSUFFICIENT_POINTS, ACCOUNT_NOT_FOUND, BALANCE_LIMIT_EXCEEDED, IDEMPOTENCY_KEY_REUSED.',
            401: 'INVALID_API_KEY or NOT_QUEST_OWNER.',
            404: 'QUEST_NOT_FOUND.',
            503: 'QUEUE_UNAVAILABLE, DATABASE_UNAVAILABLE, or ALLOCATION_FAILED (not applied; retry).',
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
          200: z.object({ allocation: allocationView }),
          ...errorResponses({
            400: 'Invalid request or quests disabled.',
            401: 'INVALID_API_KEY or NOT_QUEST_OWNER.',
            404: 'QUEST_NOT_FOUND or ALLOCATION_NOT_FOUND.',
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
        headers: idempotencyHeaders,
        body: batchBody,
        response: {
          200: z.object({ batch: batchView }),
          202: z.object({ batch: batchView }),
          ...errorResponses({
            400: 'Invalid request (a malformed item is named by its index in details; UNSUPPORTED_MEDIA_TYPE for a body that is not JSON; PAYLOAD_TOO_LARGE beyond BATCH_BODY_LIMIT_BYTES), BATCH_TOO_LARGE, IDEMPOTENCY_KEY_REUSED, or quests disabled.',
            401: 'INVALID_API_KEY or NOT_QUEST_OWNER.',
            404: 'QUEST_NOT_FOUND.',
            503: 'QUEUE_UNAVAILABLE, DATABASE_UNAVAILABLE, or ALLOCATION_FAILED (the batch stopped; retry with the same Idempotency-Key to resume).',
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
      if (idem && idempotency) await idempotency.claim(batchId, digest);
      const { row } = await createOrGetBatch(sql, {
        id: batchId,
        questId,
        ownerId,
        digest,
        addresses: items.map((i) => i.address),
        points: items.map((i) => i.points),
      });
      if (row.items_digest !== digest) throw new DomainError('IDEMPOTENCY_KEY_REUSED');

      let final: BatchRow | undefined = row.status === 'completed' ? row : undefined;
      let current: BatchRow | undefined;
      if (!final) {
        // A failed batch resumes from its last committed chunk; concurrent retries share one job.
        const run = await allocator.runBatch({ batchId, questId }, { waitMs: config.BATCH_WAIT_MS });
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
          200: z.object({ batch: batchView }),
          ...errorResponses({
            400: 'Invalid request or quests disabled.',
            401: 'INVALID_API_KEY or NOT_QUEST_OWNER.',
            404: 'QUEST_NOT_FOUND or BATCH_NOT_FOUND.',
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
