import { push, readAsClient } from './check-helpers.ts';
import type { Cluster } from './cluster.ts';
import type { Op } from './ops.ts';

/** The reversal invariants of the fault suite (invariants.ts runs them with the rest). */

interface ReversalRow {
  id: string;
  quest_id: number;
  payout_id: string;
  amount: number;
  created_at: Date;
}

/**
 * Reversal ops against PostgreSQL: each answered reversal stored once, under its key, with the payout
 * and amount it was answered with (the whole payout, or the points asked); no reversal stored that no
 * op asked for (none doubled by a retry or a re-drive) and none stored for an op answered rejected —
 * and no op rejected at all, since each payout is reversed by one op only; the status route agrees;
 * and order against the quest's allocations where a client could observe it.
 */
export async function checkReversals(cluster: Cluster, ops: Op[]): Promise<string[]> {
  const v: string[] = [];
  const reversalOps = ops.filter((o) => o.kind === 'reversal');
  const quests = [...cluster.questIds];
  const rows = await cluster.sql<ReversalRow[]>`
    select id, quest_id, payout_id, amount::int, created_at from reversals where quest_id = any(${quests}::int[])`;
  const rejected = await cluster.sql<{ id: string; error_code: string }[]>`
    select id, error_code from reversal_rejections where quest_id = any(${quests}::int[])`;
  const byId = new Map(rows.map((r) => [r.id, r]));
  const rejectedIds = new Map(rejected.map((r) => [r.id, r.error_code]));
  const asked = new Set(reversalOps.map((o) => o.requestKey));
  for (const r of rows) if (!asked.has(r.id)) v.push(`reversal ${r.id.slice(0, 14)}… stored, but no client asked for it`);
  for (const r of rejected)
    if (!asked.has(r.id)) v.push(`reversal ${r.id.slice(0, 14)}… rejected ${r.error_code}, but no client asked for it`);
  for (const op of reversalOps) {
    const rv = op.reversal!;
    const where = `reversal ${op.requestKey.slice(0, 14)}… (quest ${op.questId})`;
    const row = byId.get(op.requestKey);
    if (op.outcome === 'unresolved') v.push(`${where}: answered 202, still undecided after the load`);
    else if (op.outcome === 'unanswered') v.push(`${where}: no answer but 5xx/connection errors until the bound`);
    else if (op.outcome === 'unexpected') v.push(`${where}: unexpected answer ${op.detail}`);
    else if (op.outcome === 'rejected') {
      v.push(`${where}: rejected ${op.rejectCode}, though no other op reversed payout ${rv.payoutId.slice(0, 14)}…`);
      if (row) v.push(`${where}: answered ${op.rejectCode} but PostgreSQL holds reversal ${row.id.slice(0, 14)}…`);
    } else if (op.outcome === 'completed') {
      const expected = rv.points ?? rv.payoutAmount;
      if (!row) v.push(`${where}: answered completed, PostgreSQL holds no reversal for its key (lost)`);
      else if (rv.reversalId !== row.id || row.payout_id !== rv.payoutId || row.amount !== expected || rv.amount !== expected)
        v.push(
          `${where}: answered ${rv.reversalId} of ${rv.amount}; PostgreSQL holds ${row.amount} of ${row.payout_id}, asked ${expected}`,
        );
      if (rejectedIds.has(op.requestKey)) v.push(`${where}: has a reversal and a rejection`);
    }
  }
  v.push(...(await checkReversalStatus(cluster, reversalOps)));
  v.push(...(await checkReversalOrder(cluster, ops, byId)));
  return v;
}

/** GET /quests/{questId}/reversals/{id} says completed (same amount) for every reversal answered completed. */
async function checkReversalStatus(cluster: Cluster, reversalOps: Op[]): Promise<string[]> {
  const v: string[] = [];
  const decided = reversalOps.filter((o) => o.outcome === 'completed' || o.outcome === 'rejected');
  let i = 0;
  const worker = async () => {
    while (i < decided.length) {
      const op = decided[i++]!;
      const res = await readAsClient(cluster, `/quests/${op.questId}/reversals/${op.requestKey}`);
      const body = res?.ok ? ((await res.json()) as { reversal: { status: string; amount?: number } }) : undefined;
      const got = body?.reversal.status ?? `HTTP ${res?.status ?? 'error'}`;
      if (op.outcome === 'completed' && (got !== 'completed' || body!.reversal.amount !== op.reversal!.amount))
        v.push(`reversal ${op.requestKey.slice(0, 14)}… answered completed, its status route says ${got}`);
      if (op.outcome === 'rejected' && got !== 'rejected')
        v.push(`reversal ${op.requestKey.slice(0, 14)}… answered ${op.rejectCode}, its status route says ${got}`);
    }
  };
  await Promise.all(Array.from({ length: 4 }, worker));
  return v;
}

/**
 * Reversals and allocations of one quest are decided in one order. Payouts and reversals have
 * sequences of their own, so the order is read from the decision time both carry (created_at: one
 * per ledger transaction, taken once the job is in hand, before its answer): when one op's outcome
 * was known before another op of the same quest was first sent, the second's decision is not
 * earlier than the first's. Ops that overlapped in time are not compared (see invariants.ts, checkOrder).
 */
async function checkReversalOrder(cluster: Cluster, ops: Op[], reversals: Map<string, ReversalRow>): Promise<string[]> {
  const v: string[] = [];
  const singles = ops.filter((o) => o.kind === 'alloc' && o.outcome === 'completed' && o.payoutIds.size === 1);
  const ids = singles.map((o) => [...o.payoutIds][0]!);
  const paidAt = new Map(
    (
      await cluster.sql<{ id: string; created_at: Date }[]>`select id, created_at from payouts where id = any(${ids}::text[])`
    ).map((p) => [p.id, p.created_at.getTime()]),
  );
  const decidedAt = (o: Op): number | undefined =>
    o.kind === 'reversal' ? reversals.get(o.requestKey)?.created_at.getTime() : paidAt.get([...o.payoutIds][0]!);
  const revOps = ops.filter((o) => o.kind === 'reversal' && o.outcome === 'completed');
  const perQuest = new Map<number, Op[]>();
  for (const o of singles) push(perQuest, o.questId, o);
  for (const r of revOps) {
    const rAt = decidedAt(r);
    if (rAt === undefined) continue;
    for (const a of perQuest.get(r.questId) ?? []) {
      const aAt = decidedAt(a);
      if (aAt === undefined) continue;
      const [first, firstAt, second, secondAt] =
        a.ackAt! < r.firstSentAt ? [a, aAt, r, rAt] : r.ackAt! < a.firstSentAt ? [r, rAt, a, aAt] : [];
      if (first && secondAt! < firstAt!)
        v.push(
          `quest ${r.questId}: ${second!.requestKey.slice(0, 14)}… sent after ${first.requestKey.slice(0, 14)}… was decided, but decided before it`,
        );
    }
  }
  return v;
}
