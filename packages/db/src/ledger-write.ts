import type { Plan } from '@quest/domain';
import type { Sql } from './client.ts';

/**
 * The ledger transaction's writes of its decisions (ledger.ts, step 3): the one writer of payouts,
 * reversals and both rejection tables, of accounts' balances and of quests' points_remaining.
 * Set-based, through `unnest` arrays, one statement per table whatever the list length; returned
 * unsent, for the caller to pipeline with COMMIT. Balance changes come in account id order
 * (`plan.credits`), so two partitions crediting (or reversing on) the same accounts lock them in
 * the same order.
 */
export function writeDecisions(tx: Sql, plan: Plan, now: Date): Promise<unknown>[] {
  const writes: Promise<unknown>[] = [];
  const { payouts: paid, rejections, reversals, reversalRejections: rr, credits } = plan;
  if (paid.length) {
    writes.push(tx`
      insert into payouts (id, quest_id, account_id, amount, request_key, batch_id, item_index, created_at)
      select *, ${now}::timestamptz from unnest(
        ${paid.map((r) => r.id)}::text[], ${paid.map((r) => r.questId)}::int[], ${paid.map((r) => r.accountId)}::bigint[],
        ${paid.map((r) => r.amount)}::bigint[], ${paid.map((r) => r.key)}::text[], ${paid.map((r) => r.batchId)}::text[],
        ${paid.map((r) => r.itemIndex)}::int[])`);
  }
  if (reversals.length) {
    writes.push(tx`
      insert into reversals (id, quest_id, payout_id, account_id, amount, requested_points, reason, created_at)
      select *, ${now}::timestamptz from unnest(
        ${reversals.map((r) => r.id)}::text[], ${reversals.map((r) => r.questId)}::int[], ${reversals.map((r) => r.payoutId)}::text[],
        ${reversals.map((r) => r.accountId)}::bigint[], ${reversals.map((r) => r.amount)}::bigint[],
        ${reversals.map((r) => r.requestedPoints)}::bigint[], ${reversals.map((r) => r.reason)}::text[])`);
  }
  if (rr.length) {
    writes.push(tx`
      insert into reversal_rejections (id, quest_id, payout_id, requested_points, reason, error_code, created_at)
      select *, ${now}::timestamptz from unnest(
        ${rr.map((r) => r.key)}::text[], ${rr.map((r) => r.questId)}::int[], ${rr.map((r) => r.payoutId)}::text[],
        ${rr.map((r) => r.requestedPoints)}::bigint[], ${rr.map((r) => r.reason)}::text[], ${rr.map((r) => r.code)}::text[])`);
  }
  if (credits.length) {
    writes.push(tx`
      update accounts a set balance = a.balance + v.amount
      from unnest(${credits.map((c) => c[0])}::bigint[], ${credits.map((c) => c[1])}::bigint[]) as v(id, amount)
      where a.id = v.id`);
  }
  if (rejections.length) {
    writes.push(tx`
      insert into allocation_rejections (quest_id, request_key, address, points, error_code, batch_id, item_index, created_at)
      select *, ${now}::timestamptz from unnest(
        ${rejections.map((r) => r.questId)}::int[], ${rejections.map((r) => r.key)}::text[], ${rejections.map((r) => r.address)}::text[],
        ${rejections.map((r) => r.points)}::bigint[], ${rejections.map((r) => r.code)}::text[], ${rejections.map((r) => r.batchId)}::text[],
        ${rejections.map((r) => r.itemIndex)}::int[])`);
  }
  if (plan.pointsRemaining.size) {
    const ids = [...plan.pointsRemaining.keys()];
    writes.push(tx`
      update quests q set points_remaining = v.remaining
      from unnest(${ids}::int[], ${ids.map((id) => plan.pointsRemaining.get(id)!)}::bigint[]) as v(id, remaining)
      where q.id = v.id`);
  }
  return writes;
}
