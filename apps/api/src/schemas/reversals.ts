import { payoutSchema, REVERSAL_REASON_MAX, reversalViewSchema } from '@quest/domain';
import { z } from 'zod';
import { EXAMPLE_PAYOUT, EXAMPLE_REVERSAL } from '../openapi/examples.ts';
import { count, errorView, freeText, points, timestamp } from './common.ts';

/** The body and views of the reversal routes and of a payout's detail. */

export const reverseBody = z
  .strictObject({
    points: points.optional().meta({
      description:
        "Points to take back: a positive integer, at most the payout's unreversed remainder. Absent: all of the remainder.",
    }),
    reason: freeText(REVERSAL_REASON_MAX)
      .optional()
      .meta({ description: `Why, for the record (at most ${REVERSAL_REASON_MAX} characters).` }),
  })
  .meta({ example: { points: 100, reason: 'bot farm' } });

export const reversalSchema = reversalViewSchema;

export const reversalStatusView = z
  .object({
    id: z
      .string()
      .meta({ description: 'Reversal id (`rev_…`), the same before and after its decision.', example: EXAMPLE_REVERSAL.id }),
    status: z.enum(['pending', 'completed', 'rejected', 'failed']).meta({
      description:
        'pending: accepted, not decided yet; completed: points taken back (see amount, created_at, account); ' +
        'rejected: refused by a decision (see error); failed: given up, nothing applied, a retry with the same Idempotency-Key is safe (see error).',
    }),
    payout_id: z.string().meta({ description: 'The payout to reverse.', example: EXAMPLE_PAYOUT.id }),
    quest_id: z.number().int().positive().meta({ description: 'The quest of the payout.', example: 7 }),
    amount: reversalViewSchema.shape.amount.optional().meta({ description: 'When completed: the points taken back.' }),
    reason: reversalViewSchema.shape.reason.optional().meta({ description: 'When completed: the reason given, or null.' }),
    created_at: reversalViewSchema.shape.created_at.optional().meta({ description: 'When completed: the time of the decision.' }),
    account: reversalViewSchema.shape.account
      .optional()
      .meta({ description: 'When completed: the account the points were taken from.' }),
    error: errorView.optional().meta({ description: 'When rejected or failed.' }),
    updated_at: timestamp(
      'When this reversal was last touched: decided, accepted, re-driven or given up (ISO 8601 UTC).',
      '2026-03-02T09:30:00.456Z',
    ),
  })
  .meta({ id: 'ReversalStatus', description: 'A reversal and where it stands.' });
export type ReversalStatusView = z.output<typeof reversalStatusView>;

export const reversalResponse = z
  .object({ reversal: reversalSchema })
  .meta({ id: 'ReversalResponse', description: 'A decided reversal.' });
export const reversalStatusResponse = z.object({ reversal: reversalStatusView }).meta({ id: 'ReversalStatusResponse' });

export const payoutDetailSchema = payoutSchema
  .extend({
    reversed_amount: count('Points taken back from this payout by its reversals, in total (at most its amount).'),
    reversals: z.array(reversalSchema).meta({ description: 'Its reversals, in decision order.' }),
  })
  .meta({ id: 'PayoutDetail', description: 'A payout with what its reversals took back.' });
export const payoutDetailResponse = z.object({ payout: payoutDetailSchema }).meta({ id: 'PayoutDetailResponse' });
