import { z } from 'zod';
import { REJECTION_CODES } from './errors.ts';
import { REVERSAL_REASON_MAX, reversalViewSchema } from './reversal.ts';

/**
 * The job catalogue shared by producer (api) and consumer (worker): job name → payload schema and
 * result schema. One shape serves every single request: an ordered list of items for one partition,
 * each an allocation or a reversal (`kind`), so a quest's credits and reversals are decided in one order.
 * A single POST is a list of one; concurrent POSTs to the same partition are coalesced by the API
 * into one job; a batch is a job of its own whose items live in its row in PostgreSQL.
 *
 * The worker registers one handler per name through `JobHandlers`, a mapped type: a job added to
 * the catalogue without a handler does not compile. A handler's result goes back to the waiting
 * API process as a `JobReply`, a typed union of the result or the reason the job failed.
 */

export const allocationItemSchema = z.object({
  /** Absent on allocations queued before reversals existed. */
  kind: z.literal('allocation').optional(),
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

export const reversalItemSchema = z.object({
  kind: z.literal('reversal'),
  /** Request key, which is also the reversal's id (`rev_…`): the database refuses a second reversal for it. */
  key: z.string().min(1).max(200),
  questId: z.number().int().positive(),
  payoutId: z.string().min(1).max(200),
  /** Points to take back; absent: the payout's whole unreversed remainder. */
  points: z.number().int().positive().max(Number.MAX_SAFE_INTEGER).optional(),
  reason: z.string().max(REVERSAL_REASON_MAX).optional(),
  enqueuedAt: z.number().int().nonnegative().optional(),
  requestId: z.string().max(200).optional(),
});
export type ReversalItem = z.infer<typeof reversalItemSchema>;

/** One request of a job: an allocation (kind absent or 'allocation') or a reversal. */
export const requestItemSchema = z.union([reversalItemSchema, allocationItemSchema]);
export type RequestItem = AllocationItem | ReversalItem;
export const isReversalItem = (item: { kind?: string }): item is ReversalItem => item.kind === 'reversal';

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

/** The one place a payout's API view is built, from whichever row holds it. */
export function payoutView(p: { id: string; amount: number; createdAt: Date | string; pass: string }): PayoutView {
  const created_at = typeof p.createdAt === 'string' ? p.createdAt : p.createdAt.toISOString();
  return { id: p.id, amount: p.amount, created_at, account: { pass: p.pass } };
}

/** What became of one request item: credited (completed), reversed, rejected, or failed (nothing applied). */
export const requestOutcomeSchema = z.discriminatedUnion('status', [
  // replayed: the outcome was stored earlier for the same request key (an Idempotency-Key retry, a
  // redelivered job or a re-drive), not decided now.
  z.object({ status: z.literal('completed'), payout: payoutViewSchema, replayed: z.literal(true).optional() }),
  z.object({ status: z.literal('reversed'), reversal: reversalViewSchema, replayed: z.literal(true).optional() }),
  z.object({ status: z.literal('rejected'), code: z.enum(REJECTION_CODES), replayed: z.literal(true).optional() }),
  z.object({ status: z.literal('failed'), code: z.literal('ALLOCATION_FAILED') }),
]);
export type RequestOutcome = z.infer<typeof requestOutcomeSchema>;

/**
 * Where the worker delivers the job's result: the reply stream of the API process that queued it,
 * and a token unique to this enqueue. The token, not the BullMQ job id, names the reply: job ids
 * come from a per-queue counter in Redis, which starts again after Redis loses its data (a flush, a
 * failover to a replica that lagged), so a new job can carry an id a waiter still waits on.
 * Absent on re-driven jobs, which nobody waits for.
 */
export const replyAddressSchema = z.object({ to: z.string().max(300), token: z.string().min(1).max(100) });
export type ReplyAddress = z.infer<typeof replyAddressSchema>;

export const JOBS = {
  allocate: {
    data: z.object({ items: z.array(requestItemSchema).min(1), reply: replyAddressSchema.optional() }),
    result: z.object({ outcomes: z.array(requestOutcomeSchema), worker: z.string() }),
  },
  batch: {
    /** The items live in the batch's row in PostgreSQL, which a re-drive can enqueue again. */
    data: z.object({ batchId: z.string(), questId: z.number().int().positive(), reply: replyAddressSchema.optional() }),
    result: z.object({
      batchId: z.string(),
      status: z.enum(['completed', 'failed']),
      total: z.number().int(),
      succeeded: z.number().int(),
      failed: z.number().int(),
      worker: z.string(),
    }),
  },
} as const;

export type JobName = keyof typeof JOBS;
export const JOB_NAMES = Object.keys(JOBS) as JobName[];
export const isJobName = (name: string): name is JobName => Object.hasOwn(JOBS, name);
export type JobData<N extends JobName> = z.infer<(typeof JOBS)[N]['data']>;
export type JobResult<N extends JobName> = z.infer<(typeof JOBS)[N]['result']>;

/** What a worker sends back for a job: its result, or why it failed (a bug or a permanent error). */
export type JobReply<N extends JobName> = { ok: true; result: JobResult<N> } | { ok: false; reason: string };

export function jobReplySchema<N extends JobName>(name: N) {
  return z.discriminatedUnion('ok', [
    z.object({ ok: z.literal(true), result: JOBS[name].result }),
    z.object({ ok: z.literal(false), reason: z.string() }),
  ]) as unknown as z.ZodType<JobReply<N>>;
}

/** What a handler knows about the job it runs, beyond its data (the transport's details stay in the queue package). */
export interface JobContext {
  id: string;
  partition: number;
  /** First delivery and first try: no earlier attempt can have committed anything of it. */
  firstDelivery: boolean;
  /**
   * Aborted when the worker abandons the job (it left the pool or fenced itself): the handler stops
   * retrying and throws `JobAbandoned`; the job's next owner runs it again.
   */
  signal?: AbortSignal;
}

/** A handler gave up a job its worker abandoned; nothing is answered for it (its next owner will). */
export class JobAbandoned extends Error {
  override readonly name = 'JobAbandoned';
  constructor() {
    super('job abandoned: this worker no longer owns its partition');
  }
}

/** One handler per job of the catalogue: leaving one out does not compile. */
export type JobHandlers = { readonly [N in JobName]: (data: JobData<N>, job: JobContext) => Promise<JobResult<N>> };

export type AllocateJobData = JobData<'allocate'>;
export type AllocateJobResult = JobResult<'allocate'>;
export type BatchJobData = JobData<'batch'>;
export type BatchJobResult = JobResult<'batch'>;
