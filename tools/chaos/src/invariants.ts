import type { Cluster } from './cluster.ts';
import { push, readAsClient } from './check-helpers.ts';
import type { Op } from './ops.ts';
import { checkReversals } from './reversal-invariants.ts';

/**
 * The invariants checked after each fault, from what the clients were told and what PostgreSQL
 * holds (read directly, not through the API). Each returns human-readable violations; none may
 * remain.
 */

interface PayoutRow {
  id: string;
  seq: number;
  quest_id: number;
  request_key: string;
  batch_id: string | null;
  item_index: number | null;
  amount: number;
  pass: string;
}

const lc = (s: string) => s.toLowerCase();

export async function checkInvariants(cluster: Cluster, ops: Op[], statusBoundMs: number): Promise<string[]> {
  const v: string[] = [];
  const sql = cluster.sql;
  const quests = [...cluster.questIds];
  const payouts = await sql<PayoutRow[]>`
    select p.id, p.seq, p.quest_id, p.request_key, p.batch_id, p.item_index, p.amount, a.pass_address as pass
    from payouts p join accounts a on a.id = p.account_id
    where p.quest_id = any(${quests}::int[])`;
  const rejections = await sql<{ quest_id: number; request_key: string; batch_id: string | null; item_index: number | null }[]>`
    select quest_id, request_key, batch_id, item_index from allocation_rejections where quest_id = any(${quests}::int[])`;

  const byId = new Map(payouts.map((p) => [p.id, p]));
  const byKey = new Map<string, PayoutRow[]>();
  const byItem = new Map<string, PayoutRow[]>();
  for (const p of payouts) {
    if (p.batch_id === null) push(byKey, `${p.quest_id}:${p.request_key}`, p);
    else push(byItem, `${p.batch_id}:${p.item_index}`, p);
  }
  const rejectedKeys = new Set(
    rejections.map((r) => (r.batch_id === null ? `${r.quest_id}:${r.request_key}` : `${r.batch_id}:${r.item_index}`)),
  );

  // No request key has two payouts, nor a payout and a rejection.
  for (const [k, rows] of [...byKey, ...byItem]) {
    if (rows.length > 1) v.push(`request ${k} has ${rows.length} payouts`);
    if (rejectedKeys.has(k)) v.push(`request ${k} has a payout and a rejection`);
  }

  for (const op of ops) {
    if (op.kind === 'reversal') continue; // checkReversals
    const where = `${op.kind} ${op.requestKey.slice(0, 14)}… (quest ${op.questId})`;
    if (op.outcome === 'unresolved') v.push(`${where}: answered 202, still undecided ${statusBoundMs / 1000} s after the load`);
    else if (op.outcome === 'unanswered') v.push(`${where}: no answer but 5xx/connection errors until the bound`);
    else if (op.outcome === 'unexpected') v.push(`${where}: unexpected answer ${op.detail}`);
    if (op.payoutIds.size > 1) v.push(`${where}: the service reported ${op.payoutIds.size} different payouts`);
    if (op.kind === 'alloc') {
      if (op.outcome === 'completed') {
        const [reported] = op.payoutIds;
        const row = byId.get(reported!);
        // A keyless request answered 200 learns its key from its payout (for the status and order checks).
        if (row && !op.idemKey && !op.requestKey) op.requestKey = row.request_key;
        if (!row || row.quest_id !== op.questId || row.request_key !== op.requestKey)
          v.push(`${where}: answered payout ${reported}, which PostgreSQL does not hold for its key`);
        else if (row.amount !== op.items[0]!.points || lc(row.pass) !== lc(op.items[0]!.address))
          v.push(`${where}: payout ${row.id} differs from the request`);
      }
      const rows = byKey.get(`${op.questId}:${op.requestKey}`) ?? [];
      if (op.outcome === 'rejected' && rows.length > 0) {
        v.push(`${where}: answered ${op.rejectCode} but PostgreSQL holds payout ${rows[0]!.id}`);
      }
    } else if (op.outcome === 'completed') {
      for (const [index, id] of op.itemPayouts!) {
        const row = (byItem.get(`${op.requestKey}:${index}`) ?? [])[0];
        if (row?.id !== id) v.push(`${where}: item ${index} answered payout ${id}, PostgreSQL holds ${row?.id ?? 'none'}`);
      }
      for (const index of op.itemRejected!) {
        if (byItem.has(`${op.requestKey}:${index}`)) v.push(`${where}: item ${index} answered rejected but has a payout`);
      }
      if (op.itemPayouts!.size + op.itemRejected!.size !== op.items.length)
        v.push(`${where}: ${op.itemPayouts!.size + op.itemRejected!.size} results for ${op.items.length} items`);
    }
  }

  v.push(...(await checkStatusRoutes(cluster, ops)));
  v.push(...checkOrder(ops, payouts, byKey, byItem));
  v.push(...(await checkReversals(cluster, ops)));
  v.push(...(await checkStored(cluster)));
  return v;
}

/**
 * No request answered or stored completed is reported failed (or anything but completed with the
 * same payout) by GET …/allocations/{id}; a rejected one stays rejected.
 */
async function checkStatusRoutes(cluster: Cluster, ops: Op[]): Promise<string[]> {
  const v: string[] = [];
  const singles = ops.filter(
    (o) => o.kind === 'alloc' && o.requestKey && (o.outcome === 'completed' || o.outcome === 'rejected'),
  );
  let i = 0;
  const worker = async () => {
    while (i < singles.length) {
      const op = singles[i++]!;
      const res = await readAsClient(cluster, `/quests/${op.questId}/allocations/${op.requestKey}`);
      const body = res?.ok ? ((await res.json()) as { allocation: { status: string; payout?: { id: string } } }) : undefined;
      const got = body?.allocation.status ?? `HTTP ${res?.status ?? 'error'}`;
      if (op.outcome === 'completed' && (got !== 'completed' || !op.payoutIds.has(body!.allocation.payout!.id)))
        v.push(`allocation ${op.requestKey.slice(0, 14)}… answered completed, its status route says ${got}`);
      if (op.outcome === 'rejected' && got !== 'rejected')
        v.push(`allocation ${op.requestKey.slice(0, 14)}… answered ${op.rejectCode}, its status route says ${got}`);
    }
  };
  await Promise.all(Array.from({ length: 4 }, worker));
  return v;
}

/**
 * Per-quest order, checked only where it is sound with retries in flight: if request A's outcome was
 * known to a client (200, or its 202 decided) before request B was first sent, A was decided before B
 * was even enqueued, so A's payouts precede B's in `payouts.seq`. Requests that overlapped in time
 * have no order a client can observe (a retry, a coalesced job or a re-drive after Redis lost the job
 * may decide them either way), so they are not compared — which is also why re-driven requests,
 * decided after whatever was enqueued before their re-drive, never produce a false violation here.
 */
function checkOrder(
  ops: Op[],
  payouts: PayoutRow[],
  byKey: Map<string, PayoutRow[]>,
  byItem: Map<string, PayoutRow[]>,
): string[] {
  const v: string[] = [];
  const seqsOf = (op: Op): number[] =>
    op.kind === 'alloc'
      ? (byKey.get(`${op.questId}:${op.requestKey}`) ?? []).map((p) => p.seq)
      : op.items.flatMap((_, i) => (byItem.get(`${op.requestKey}:${i}`) ?? []).map((p) => p.seq));
  void payouts;
  const perQuest = new Map<number, Op[]>();
  for (const op of ops) if (op.kind !== 'reversal') push(perQuest, op.questId, op);
  for (const [questId, list] of perQuest) {
    const acked = list
      .filter((o) => o.ackAt !== undefined && o.outcome === 'completed')
      .map((o) => ({ at: o.ackAt!, max: Math.max(...seqsOf(o), Number.NEGATIVE_INFINITY), op: o }))
      .sort((a, b) => a.at - b.at);
    const sent = list
      .map((o) => ({ at: o.firstSentAt, min: Math.min(...seqsOf(o), Number.POSITIVE_INFINITY), op: o }))
      .sort((a, b) => a.at - b.at);
    let j = 0;
    let best: { max: number; op: Op } | undefined;
    for (const s of sent) {
      while (j < acked.length && acked[j]!.at < s.at) {
        if (!best || acked[j]!.max > best.max) best = acked[j]!;
        j++;
      }
      if (best && s.min !== Number.POSITIVE_INFINITY && s.min < best.max) {
        v.push(
          `quest ${questId}: ${s.op.requestKey.slice(0, 14)}… sent after ${best.op.requestKey.slice(0, 14)}… was decided, but paid before it (seq ${s.min} < ${best.max})`,
        );
      }
    }
  }
  return v;
}

/**
 * What PostgreSQL holds on its own: balance = Σ payouts − Σ reversals per account and never below
 * zero, points_remaining = total − Σ payouts + Σ reversals per quest, no payout reversed by more than
 * its amount, nothing left pending, no paid request stored failed.
 */
async function checkStored(cluster: Cluster): Promise<string[]> {
  const v: string[] = [];
  const sql = cluster.sql;
  const balances = await sql<{ id: number; balance: string; paid: string; reversed: string }[]>`
    select a.id, a.balance::text, coalesce(p.s, 0)::text as paid, coalesce(r.s, 0)::text as reversed
    from accounts a
      left join (select account_id, sum(amount) s from payouts group by account_id) p on p.account_id = a.id
      left join (select account_id, sum(amount) s from reversals group by account_id) r on r.account_id = a.id
    where a.balance <> coalesce(p.s, 0) - coalesce(r.s, 0) or a.balance < 0`;
  for (const b of balances)
    v.push(`account ${b.id}: balance ${b.balance} ≠ Σ payouts ${b.paid} − Σ reversals ${b.reversed} (or < 0)`);
  const quests = await sql<{ id: number; total: string; remaining: string; paid: string; reversed: string }[]>`
    select q.id, q.total_points::text as total, q.points_remaining::text as remaining,
           coalesce(p.s, 0)::text as paid, coalesce(r.s, 0)::text as reversed
    from quests q
      left join (select quest_id, sum(amount) s from payouts group by quest_id) p on p.quest_id = q.id
      left join (select quest_id, sum(amount) s from reversals group by quest_id) r on r.quest_id = q.id
    where q.points_remaining <> q.total_points - coalesce(p.s, 0) + coalesce(r.s, 0) or q.points_remaining < 0`;
  for (const q of quests)
    v.push(`quest ${q.id}: points_remaining ${q.remaining} ≠ total ${q.total} − Σ payouts ${q.paid} + Σ reversals ${q.reversed}`);
  const over = await sql<{ id: string; amount: number; reversed: string }[]>`
    select p.id, p.amount, sum(r.amount)::text as reversed
    from payouts p join reversals r on r.payout_id = p.id
    group by p.id, p.amount having sum(r.amount) > p.amount`;
  for (const p of over) v.push(`payout ${p.id.slice(0, 14)}…: reversed ${p.reversed} of ${p.amount}`);
  const batches = await sql<{ id: string; status: string }[]>`
    select id, status from batches where status in ('pending', 'processing')`;
  for (const b of batches) v.push(`batch ${b.id.slice(0, 14)}… left ${b.status}`);
  // The status-row table of 202'd requests (its shape may change with the ledger rewrite; read what exists).
  const [reg] = await sql<{ t: string | null }[]>`select to_regclass('allocation_requests')::text as t`;
  if (reg?.t) {
    const cols = (
      await sql<{ c: string }[]>`
      select column_name as c from information_schema.columns where table_name = 'allocation_requests'`
    ).map((r) => r.c);
    if (cols.includes('status')) {
      // A reversal's marker (kind 'reversal', since reversals) is decided by its reversal or rejection row,
      // whose id is the request key.
      const paidFailed = await sql<{ request_key: string }[]>`
        select r.request_key from allocation_requests r
        where r.status = 'failed'
          and (exists (select 1 from payouts p where p.quest_id = r.quest_id and p.request_key = r.request_key and p.batch_id is null)
            or exists (select 1 from reversals v where v.id = r.request_key))`;
      for (const r of paidFailed) v.push(`request ${r.request_key.slice(0, 14)}… is paid but stored failed`);
      const pending = await sql<{ request_key: string }[]>`
        select r.request_key from allocation_requests r
        where r.status = 'pending'
          and not exists (select 1 from payouts p where p.quest_id = r.quest_id and p.request_key = r.request_key and p.batch_id is null)
          and not exists (select 1 from allocation_rejections x where x.quest_id = r.quest_id and x.request_key = r.request_key)
          and not exists (select 1 from reversals v where v.id = r.request_key)
          and not exists (select 1 from reversal_rejections v where v.id = r.request_key)`;
      for (const r of pending) v.push(`request ${r.request_key.slice(0, 14)}… left pending in PostgreSQL`);
    }
  }
  const audit = await cluster.admin(['audit', '--json'], 60_000);
  if (audit.code !== 0) v.push(`quest-admin audit exited ${audit.hung ? 'hung' : audit.code}: ${audit.output.slice(0, 300)}`);
  return v;
}
