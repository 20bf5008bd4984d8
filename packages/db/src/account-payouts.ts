import { type PayoutView, payoutView } from '@quest/domain';
import type { Sql } from './client.ts';

/** A payout of one account on one quest, with what its reversals took back. */
export interface AccountPayout {
  payout: PayoutView;
  /** Σ amount of its reversals. */
  reversedAmount: number;
}

/**
 * The payouts of an account on a quest, oldest first (decision order, so pages stay stable while
 * newer payouts arrive), with what reversals took back from each: how an operator finds every
 * payout of an address to reverse it. No account with this address: no payouts.
 */
export async function listAccountPayouts(
  sql: Sql,
  questId: number,
  pass: string,
  page: { limit: number; offset: number },
): Promise<AccountPayout[]> {
  const rows = await sql<{ id: string; amount: number; created_at: Date; pass_address: string; reversed: string }[]>`
    select p.id, p.amount, p.created_at, a.pass_address,
           (select coalesce(sum(r.amount), 0) from reversals r where r.payout_id = p.id)::text as reversed
    from accounts a join payouts p on p.account_id = a.id and p.quest_id = ${questId}
    where lower(a.pass_address) = lower(${pass})
    order by p.seq
    limit ${page.limit} offset ${page.offset}`;
  return rows.map((r) => ({
    payout: payoutView({ id: r.id, amount: r.amount, createdAt: r.created_at, pass: r.pass_address }),
    reversedAmount: Number(r.reversed),
  }));
}
