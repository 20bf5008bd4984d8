import { payoutIdParamSchema } from '@quest/domain';

/**
 * What `quest-admin payouts reverse` sends, decided without the API: which rows are valid, and the
 * Idempotency-Key of each reversal — what makes a re-run reverse nothing twice.
 */

/** Never change: a new scheme would give every reversal a new key, and partial ones would be taken again. */
export const KEY_SCHEME = 'quest-admin-reverse-v1';

/** One reversal to send: of a payout, all of its remainder (points undefined) or `points` of it. */
export interface ReversalTask {
  /** The input file's line it comes from (a payout id's, or an address's). */
  line: number;
  payoutId: string;
  points: number | undefined;
  /** --addresses: the address whose payout this is. */
  address?: string;
  key: string;
}

export type RowCheck<T> = { ok: true; value: T } | { ok: false; reason: string };

/** A `payout_id` cell (`pay_…`, as the API answers it) and an optional `points` cell (a positive integer). */
export function checkPayoutRow(cells: {
  payout_id: string;
  points: string;
}): RowCheck<{ payoutId: string; points: number | undefined }> {
  const payoutId = cells.payout_id;
  if (!payoutIdParamSchema.safeParse(payoutId).success) return { ok: false, reason: 'payout_id is not a payout id (pay_…)' };
  if (cells.points === '') return { ok: true, value: { payoutId, points: undefined } };
  const points = Number(cells.points);
  if (!/^\d+$/.test(cells.points) || !Number.isSafeInteger(points) || points < 1)
    return { ok: false, reason: 'points is not a positive integer' };
  return { ok: true, value: { payoutId, points } };
}

/** An `address` cell: 0x + 40 hex digits, any letter case (the API compares in checksum form). */
export function checkAddressRow(cells: { address: string }): RowCheck<string> {
  return /^0x[0-9a-fA-F]{40}$/.test(cells.address)
    ? { ok: true, value: cells.address }
    : { ok: false, reason: 'address is not 0x + 40 hex digits' };
}

/**
 * The Idempotency-Key of a reversal: the quest, the payout, the amount asked (`all` for the
 * remainder) and which repetition of that (payout, amount) in the input this is — so the same input
 * gives the same keys on every run (the service replays them), while a file that deliberately
 * reverses 10 points of a payout twice sends two reversals. The reason is not part of it: a re-run
 * with another --reason must not reverse again (the service answers IDEMPOTENCY_KEY_REUSED).
 */
export function reversalKey(k: { questId: number; payoutId: string; points: number | undefined; occurrence: number }): string {
  return `${KEY_SCHEME}:q${k.questId}:${k.payoutId}:${k.points ?? 'all'}:${k.occurrence}`;
}

/** Counts each (payout, amount) pair as it is met, for reversalKey's `occurrence`. */
export class Occurrences {
  private readonly seen = new Map<string, number>();

  next(payoutId: string, points: number | undefined): number {
    const k = `${payoutId}:${points ?? 'all'}`;
    const n = this.seen.get(k) ?? 0;
    this.seen.set(k, n + 1);
    return n;
  }
}
