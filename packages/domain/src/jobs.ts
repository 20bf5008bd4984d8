import { z } from 'zod';
import { REJECTION_CODES } from './errors.ts';

/**
 * The job catalogue shared by producer (api) and consumer (worker): job name → payload schema and
 * result schema. One shape serves every allocation: an ordered list of items for one partition.
 * A single POST is a list of one; concurrent POSTs to the same partition are coalesced by the API
 * into one job; a batch is a job of its own whose items live in its row in PostgreSQL.
 */

export const allocationItemSchema = z.object({
  /** Request key: the allocation id, unique per quest. The database refuses a second credit for it. */
  key: z.string().min(1).max(200),
  questId: z.number().int().positive(),
  points: z.number().int().positive().max(Number.MAX_SAFE_INTEGER),
  /** EIP-55 checksummed pass address. */
  address: z.string().regex(/^0x[0-9a-fA-F]{40}$/),
  /** When the API enqueued it (ms since epoch): orders the request's status writers. */
  enqueuedAt: z.number().int().nonnegative().optional(),
  /** The API request's id (x-request-id), so the worker's decision log line can be found from it. */
  requestId: z.string().max(200).optional(),
});
export type AllocationItem = z.infer<typeof allocationItemSchema>;

export const payoutViewSchema = z.object({
  id: z
    .string()
    .meta({ description: 'Payout id: `pay_` followed by a time-sortable ULID.', example: 'pay_01jf8q4g0x7m3r6v2k9d1n5bta' }),
  amount: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER).meta({ description: 'Points allocated.', example: 250 }),
  created_at: z.iso
    .datetime()
    .meta({ description: 'ISO 8601 UTC timestamp of the decision.', example: '2026-03-01T12:00:00.123Z' }),
  account: z.object({
    pass: z.string().meta({
      description: 'EIP-55 checksummed pass address of the receiving account.',
      example: '0x52908400098527886E0F7030069857D2E4169EE7',
    }),
  }),
});
export type PayoutView = z.infer<typeof payoutViewSchema>;

export const allocationOutcomeSchema = z.discriminatedUnion('status', [
  // replayed: the outcome was stored earlier for the same request key (an Idempotency-Key retry, a
  // redelivered job or a re-drive), not decided now.
  z.object({ status: z.literal('completed'), payout: payoutViewSchema, replayed: z.literal(true).optional() }),
  z.object({ status: z.literal('rejected'), code: z.enum(REJECTION_CODES), replayed: z.literal(true).optional() }),
  z.object({ status: z.literal('failed'), code: z.literal('ALLOCATION_FAILED') }),
]);
export type AllocationOutcome = z.infer<typeof allocationOutcomeSchema>;

/**
 * Where the worker delivers the job's result: the reply stream of the API process that queued it
 * (advisory; absent on re-driven jobs, which nobody waits for).
 */
const replyTo = z.string().max(300).optional();

export const allocateJob = {
  name: 'allocate',
  data: z.object({ items: z.array(allocationItemSchema).min(1), replyTo }),
  result: z.object({ outcomes: z.array(allocationOutcomeSchema), worker: z.string() }),
} as const;

export const batchJob = {
  name: 'batch',
  /** The items live in the batch's row in PostgreSQL, which a re-drive can enqueue again. */
  data: z.object({
    batchId: z.string(),
    questId: z.number().int().positive(),
    replyTo,
  }),
  result: z.object({
    batchId: z.string(),
    status: z.enum(['completed', 'failed']),
    total: z.number().int(),
    succeeded: z.number().int(),
    failed: z.number().int(),
    worker: z.string(),
  }),
} as const;

export type AllocateJobData = z.infer<typeof allocateJob.data>;
export type AllocateJobResult = z.infer<typeof allocateJob.result>;
export type BatchJobData = z.infer<typeof batchJob.data>;
export type BatchJobResult = z.infer<typeof batchJob.result>;
