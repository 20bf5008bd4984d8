import { z } from 'zod';

/**
 * Reversals: taking back all or part of a payout. The rule is pure (decideReversal); the planner
 * (plan.ts) applies it in the quest's order beside allocations, and the ledger writes what it
 * decides: the reversal row, the quest's points_remaining up by the amount, the account's balance
 * down by it. A payout's reversals never add up to more than the payout.
 */

/** What a reversal needs to know of its payout, read under the quest's lock. */
export interface ReversedPayoutState {
  amount: number;
  /** Σ amount of the payout's reversals so far (stored, and decided earlier in the same plan). */
  reversed: number;
}

export type ReversalDecision =
  | { ok: true; amount: number }
  | { ok: false; code: 'PAYOUT_ALREADY_REVERSED' | 'REVERSAL_EXCEEDS_PAYOUT' };

/**
 * Reverse `points` of the payout, or — without `points` — its whole unreversed remainder. Nothing
 * left to reverse is PAYOUT_ALREADY_REVERSED (also when `points` is given); more than is left is
 * REVERSAL_EXCEEDS_PAYOUT. No window or action-type check: fraud is found late, and the quest's
 * budget comes back also after its window ended.
 */
export function decideReversal(payout: ReversedPayoutState, points: number | undefined): ReversalDecision {
  const remainder = payout.amount - payout.reversed;
  if (remainder <= 0) return { ok: false, code: 'PAYOUT_ALREADY_REVERSED' };
  if (points === undefined) return { ok: true, amount: remainder };
  if (points > remainder) return { ok: false, code: 'REVERSAL_EXCEEDS_PAYOUT' };
  return { ok: true, amount: points };
}

export const REVERSAL_REASON_MAX = 500;

export const reversalViewSchema = z
  .object({
    id: z.string().meta({
      description:
        'Reversal id: `rev_` followed by a time-sortable ULID, or `rev_k…` derived from the Idempotency-Key it was sent with. ' +
        'Known from the moment it is accepted: a 202 names the same id.',
      example: 'rev_01jf8q5m2c4d6e8f0g1h3j5k7m',
    }),
    payout_id: z.string().meta({ description: 'The payout reversed.', example: 'pay_01jf8q4g0x7m3r6v2k9d1n5bta' }),
    quest_id: z.number().int().positive().meta({ description: 'The quest of the payout.', example: 7 }),
    amount: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER).meta({
      description: "Points taken back: returned to the quest's points_remaining, taken from the account.",
      example: 100,
    }),
    reason: z
      .string()
      .nullable()
      .meta({ description: 'The reason given with the request; null when none.', example: 'bot farm' }),
    created_at: z.iso
      .datetime()
      .meta({ description: 'ISO 8601 UTC timestamp of the decision.', example: '2026-03-02T09:30:00.456Z' }),
    account: z.object({
      pass: z.string().meta({
        description: 'EIP-55 checksummed pass address of the account the points were taken from.',
        example: '0x52908400098527886E0F7030069857D2E4169EE7',
      }),
    }),
  })
  .meta({ id: 'Reversal', description: 'Points taken back from a payout.' });
export type ReversalView = z.infer<typeof reversalViewSchema>;

/** The one place a reversal's API view is built, from whichever row holds it. */
export function reversalView(r: {
  id: string;
  payoutId: string;
  questId: number;
  amount: number;
  reason: string | null;
  createdAt: Date | string;
  pass: string;
}): ReversalView {
  const created_at = typeof r.createdAt === 'string' ? r.createdAt : r.createdAt.toISOString();
  return {
    id: r.id,
    payout_id: r.payoutId,
    quest_id: r.questId,
    amount: r.amount,
    reason: r.reason,
    created_at,
    account: { pass: r.pass },
  };
}
