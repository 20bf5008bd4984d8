import { type PayoutView, payoutView, type ReversalView, reversalView } from '@quest/domain';
import type { Sql } from './client.ts';

/** A payout as its owner sees it on its own: the payout, what reversals took back, and the reversals. */
export interface PayoutDetail {
  payout: PayoutView;
  /** Σ amount of its reversals. */
  reversedAmount: number;
  /** Its reversals, in decision order. */
  reversals: ReversalView[];
}

/** Whether the quest has this payout: the reversal route's cheap pre-check (404 PAYOUT_NOT_FOUND). */
export async function questHasPayout(sql: Sql, questId: number, payoutId: string): Promise<boolean> {
  const [row] = await sql`select 1 from payouts where id = ${payoutId} and quest_id = ${questId}`;
  return row !== undefined;
}

/** The payout with its reversals; undefined when the quest has no payout with this id. */
export async function getPayoutDetail(sql: Sql, questId: number, payoutId: string): Promise<PayoutDetail | undefined> {
  const [[paid], reversals] = await Promise.all([
    sql<{ id: string; amount: number; created_at: Date; pass_address: string }[]>`
      select p.id, p.amount, p.created_at, a.pass_address
      from payouts p join accounts a on a.id = p.account_id
      where p.id = ${payoutId} and p.quest_id = ${questId}`,
    sql<{ id: string; amount: number; reason: string | null; created_at: Date; pass_address: string }[]>`
      select r.id, r.amount, r.reason, r.created_at, a.pass_address
      from reversals r join accounts a on a.id = r.account_id
      where r.payout_id = ${payoutId} and r.quest_id = ${questId}
      order by r.seq`,
  ]);
  if (!paid) return undefined;
  return {
    payout: payoutView({ id: paid.id, amount: paid.amount, createdAt: paid.created_at, pass: paid.pass_address }),
    reversedAmount: reversals.reduce((sum, r) => sum + r.amount, 0),
    reversals: reversals.map((r) =>
      reversalView({
        id: r.id,
        payoutId,
        questId,
        amount: r.amount,
        reason: r.reason,
        createdAt: r.created_at,
        pass: r.pass_address,
      }),
    ),
  };
}
