import { payoutIdParamSchema } from '@quest/domain';
import { z } from 'zod';
import { allocateBody } from '../schemas/allocations.ts';
import { batchBody } from '../schemas/batches.ts';
import { idempotencyHeaders } from '../schemas/common.ts';
import { createWebhookEndpointBody, replayBody, webhookEndpointIdSchema } from '../schemas/events.ts';
import { reverseBody } from '../schemas/reversals.ts';

/**
 * The write commands' inputs: the routes' own body schemas (the OpenAPI document's) with what the
 * path and headers add, so the console's forms and the JSON routes pass the same checks.
 */

const questId = z.number().int().positive().max(2_147_483_647);
const idempotencyKey = idempotencyHeaders.shape['idempotency-key'];

export const creditInput = allocateBody.extend({ questId, idempotencyKey });
export type CreditInput = z.input<typeof creditInput>;

export const reverseInput = reverseBody.extend({ questId, payoutId: payoutIdParamSchema, idempotencyKey });
export type ReverseInput = z.input<typeof reverseInput>;

export const batchInput = z.strictObject({
  questId,
  items: batchBody.shape.allocations,
  idempotencyKey,
  /** Answer as soon as the batch is queued (`Prefer: respond-async`) instead of waiting BATCH_WAIT_MS. */
  respondAsync: z.boolean(),
});
export type BatchInput = z.input<typeof batchInput>;

export const createEndpointInput = createWebhookEndpointBody;
export type CreateEndpointInput = z.input<typeof createEndpointInput>;

export const endpointInput = z.strictObject({ id: webhookEndpointIdSchema });
export type EndpointInput = z.input<typeof endpointInput>;

export const replayInput = replayBody.extend({ id: webhookEndpointIdSchema });
export type ReplayInput = z.input<typeof replayInput>;
