import type { Sql } from '@quest/db';
import { type AuditResult, auditLedger, checkCredits, waitForDrain } from './audit.ts';
import type { BatchHttpResult } from './batch-http.ts';
import type { ScenarioName } from './config.ts';
import type { BaseCtx, Ctx, ScenarioOutput, Verdict } from './context.ts';
import type { CreditCliResult } from './credit-cli.ts';
import type { DirectResult } from './direct.ts';
import type { AckedPayout, LoadResult } from './http-load.ts';
import type { ReversalLoadResult } from './reversal-load.ts';
import type { Row } from './stats.ts';

/**
 * The correctness checks every scenario ends with (exact payouts, nothing doubled, the ledger's
 * invariants), and the scenario's output built from them.
 */

export function sumValues(o: Record<string, number>): number {
  return Object.values(o).reduce((a, b) => a + b, 0);
}

/** `sql`: the database the run's rows are in (the obvious-queue peer has its own). */
export async function verifyLoad(ctx: Ctx, questIds: number[], load: LoadResult, sql: Sql = ctx.infra.sql): Promise<Verdict> {
  const reasons: string[] = [];
  if (load.accepted202 > 0) {
    const drained = await waitForDrain(ctx.infra.redis, ctx.infra.prefix, ctx.cfg.partitions, 60_000);
    if (!drained) reasons.push('queues did not drain within 60 s');
  }
  const inFlightAtStop = Math.max(0, load.sent - load.received);
  const credits = await checkCredits(sql, questIds, load.payoutIds, inFlightAtStop + load.accepted202);
  const non2xx = sumValues(load.otherStatus);
  if (non2xx) reasons.push(`${non2xx} non-2xx (${JSON.stringify(load.otherStatus)})`);
  if (load.errors || load.timeouts) reasons.push(`${load.errors} connection errors, ${load.timeouts} timeouts`);
  if (credits.lost) reasons.push(`${credits.lost} acknowledged payouts missing`);
  if (credits.repeatedIds) reasons.push(`${credits.repeatedIds} payout ids handed out twice`);
  if (credits.unacknowledged > credits.unacknowledgedAllowed)
    reasons.push(`${credits.unacknowledged} unacknowledged payouts (> ${credits.unacknowledgedAllowed} in flight)`);
  if (credits.rejections) reasons.push(`${credits.rejections} rejections`);
  if (load.sampleErrors.length) reasons.push(`e.g. ${load.sampleErrors[0]}`);
  return { ok: reasons.length === 0, reasons, credits };
}

export interface ReversalCheck {
  reversalsInDb: number;
  acknowledged: number;
  lost: number;
  /** Reversals answered with a payout or amount PostgreSQL does not hold for them. */
  mismatched: number;
  unacknowledged: number;
  /** Payouts with more than one reversal (each was reversed whole once). */
  doubled: number;
  /** Rejections stored other than the deliberate second reversals' PAYOUT_ALREADY_REVERSED. */
  unexpectedRejections: number;
  /** Decisions out of client-observable order (see verifyReversals). */
  orderViolations: number;
  /** Allocations and reversals compared for order. */
  orderPairs: number;
}

/**
 * The reversals mixed into a load, checked against PostgreSQL: every acknowledged reversal exists
 * once with the payout and amount it was answered with; no payout reversed twice; nothing
 * unacknowledged beyond the 202s; every replay replayed and every second reversal refused; and
 * order where a client could observe it — an allocation answered before a reversal of its quest was
 * sent was decided no later than it, and a reversal answered before an allocation of its quest was
 * sent was decided no later than that one (decision times are the ledger's created_at, one per
 * transaction, taken after the job was enqueued and before its answer).
 */
export async function verifyReversals(
  ctx: Ctx,
  questIds: number[],
  payouts: readonly AckedPayout[],
  r: ReversalLoadResult,
  expected: number,
): Promise<Verdict & { reversals: ReversalCheck }> {
  const reasons: string[] = [];
  const sql = ctx.infra.sql;
  const rows = await sql<{ id: string; payout_id: string; amount: number; created_at: Date; quest_id: number }[]>`
    select id, payout_id, amount::int, created_at, quest_id from reversals where quest_id = any(${questIds}::int[])`;
  const rejections = await sql<{ error_code: string; n: number }[]>`
    select error_code, count(*)::int as n from reversal_rejections where quest_id = any(${questIds}::int[]) group by 1`;
  const paidAt = new Map(
    (
      await sql<{ id: string; created_at: Date }[]>`
        select id, created_at from payouts where quest_id = any(${questIds}::int[])`
    ).map((p) => [p.id, p.created_at.getTime()]),
  );
  const byId = new Map(rows.map((x) => [x.id, x]));
  let lost = 0;
  let mismatched = 0;
  for (const a of r.reversals) {
    const row = byId.get(a.id);
    if (!row) lost++;
    else if (row.payout_id !== a.payoutId || row.amount !== a.amount || row.quest_id !== a.questId) mismatched++;
  }
  const acked = new Set(r.reversals.map((a) => a.id));
  const unacknowledged = rows.filter((x) => !acked.has(x.id)).length;
  const perPayout = new Map<string, number>();
  for (const x of rows) perPayout.set(x.payout_id, (perPayout.get(x.payout_id) ?? 0) + 1);
  const doubled = [...perPayout.values()].filter((n) => n > 1).length;
  const unexpectedRejections = rejections.filter((x) => x.error_code !== 'PAYOUT_ALREADY_REVERSED').reduce((s, x) => s + x.n, 0);
  const alreadyReversed = rejections.find((x) => x.error_code === 'PAYOUT_ALREADY_REVERSED')?.n ?? 0;

  // Order, per quest, where a client could tell.
  const byQuest = new Map<number, AckedPayout[]>();
  for (const p of payouts) {
    const list = byQuest.get(p.questId);
    if (list) list.push(p);
    else byQuest.set(p.questId, [p]);
  }
  let orderViolations = 0;
  let orderPairs = 0;
  const samples: string[] = [];
  for (const a of r.reversals) {
    const decided = byId.get(a.id)?.created_at.getTime();
    if (decided === undefined) continue;
    for (const p of byQuest.get(a.questId) ?? []) {
      const paid = paidAt.get(p.id);
      if (paid === undefined) continue;
      if (p.ackAt < a.sentAt) {
        orderPairs++;
        if (paid > decided) {
          orderViolations++;
          if (samples.length < 3) samples.push(`${p.id} answered before ${a.id} was sent, decided after it`);
        }
      } else if (a.ackAt < p.sentAt) {
        orderPairs++;
        if (decided > paid) {
          orderViolations++;
          if (samples.length < 3) samples.push(`${a.id} answered before ${p.id} was sent, decided after it`);
        }
      }
    }
  }

  const non2xx = sumValues(r.otherStatus);
  if (r.reversals.length !== expected) reasons.push(`${r.reversals.length} of ${expected} reversals answered 200`);
  if (non2xx) reasons.push(`reversals: ${non2xx} non-2xx (${JSON.stringify(r.otherStatus)})`);
  if (r.errors) reasons.push(`reversals: ${r.errors} connection errors`);
  if (lost) reasons.push(`${lost} acknowledged reversals missing`);
  if (mismatched) reasons.push(`${mismatched} reversals answered with another payout or amount than stored`);
  // 202s were followed to their decision, so every reversal stored was acknowledged.
  if (unacknowledged) reasons.push(`${unacknowledged} reversals stored that no client was told about`);
  if (doubled) reasons.push(`${doubled} payouts reversed more than once`);
  if (unexpectedRejections) reasons.push(`${unexpectedRejections} reversal rejections other than PAYOUT_ALREADY_REVERSED`);
  if (alreadyReversed !== r.reverseAgain.sent)
    reasons.push(`${alreadyReversed} PAYOUT_ALREADY_REVERSED stored for ${r.reverseAgain.sent} second reversals`);
  if (r.replays.ok !== r.replays.sent)
    reasons.push(`${r.replays.sent - r.replays.ok} of ${r.replays.sent} retried keys not replayed`);
  if (r.reverseAgain.refused !== r.reverseAgain.sent)
    reasons.push(`${r.reverseAgain.sent - r.reverseAgain.refused} of ${r.reverseAgain.sent} second reversals not refused`);
  if (orderViolations) reasons.push(`${orderViolations} order violations, e.g. ${samples[0]}`);
  if (r.sampleErrors.length) reasons.push(`reversals: e.g. ${r.sampleErrors[0]}`);
  return {
    ok: reasons.length === 0,
    reasons,
    reversals: {
      reversalsInDb: rows.length,
      acknowledged: r.reversals.length,
      lost,
      mismatched,
      unacknowledged,
      doubled,
      unexpectedRejections,
      orderViolations,
      orderPairs,
    },
  };
}

export async function verifyDirect(ctx: Ctx, questIds: number[], d: DirectResult): Promise<Verdict> {
  const reasons: string[] = [];
  const credits = await checkCredits(ctx.infra.sql, questIds, d.payoutIds, 0);
  if (d.errors) reasons.push(`limit: ${d.errors} errors (${d.sampleErrors[0] ?? ''})`);
  if (d.notCompleted) reasons.push(`limit: ${d.notCompleted} items not completed`);
  if (!credits.ok) reasons.push(`limit: credits mismatch ${JSON.stringify({ ...credits, ok: undefined })}`);
  return { ok: reasons.length === 0, reasons, credits };
}

/** The CLI run: exit 0, every row newly credited once, the quest's payouts exactly those rows. */
export async function verifyCreditCli(ctx: Ctx, questId: number, rows: number, r: CreditCliResult): Promise<Verdict> {
  const reasons: string[] = [];
  if (r.code !== 0) reasons.push(`quest-admin credit exited ${r.code}: ${r.stderr.slice(0, 300)}`);
  const s = r.summary;
  if (s?.total !== rows || s.credited !== rows || s.failed !== 0 || s.replayed !== 0)
    reasons.push(`quest-admin credit summary ${JSON.stringify(s)}; expected ${rows} rows newly credited`);
  const [{ n, paid } = { n: 0, paid: 0 }] = await ctx.infra.sql<{ n: number; paid: number }[]>`
    select count(*)::int as n, count(distinct account_id)::int as paid from payouts where quest_id = ${questId}`;
  if (n !== rows || paid !== rows) reasons.push(`quest-admin credit: ${n} payouts to ${paid} accounts, expected ${rows}`);
  return { ok: reasons.length === 0, reasons };
}

export async function verifyBatch(ctx: Ctx, questId: number, b: BatchHttpResult): Promise<Verdict> {
  const reasons: string[] = [];
  const credits = await checkCredits(ctx.infra.sql, [questId], b.payoutIds, 0);
  const non2xx = sumValues(b.otherStatus);
  if (non2xx) reasons.push(`${non2xx} non-2xx (${b.sampleErrors[0] ?? ''})`);
  if (b.failedBatches) reasons.push(`${b.failedBatches} batches not completed`);
  if (b.failed) reasons.push(`${b.failed} items rejected`);
  if (b.succeeded !== b.items) reasons.push(`${b.succeeded} of ${b.items} items credited`);
  if (!credits.ok) reasons.push(`credits mismatch ${JSON.stringify({ ...credits, ok: undefined })}`);
  return { ok: reasons.length === 0, reasons, credits };
}

export async function finish(
  ctx: BaseCtx,
  name: ScenarioName,
  verdicts: Verdict[],
  rows: Omit<Row, 'status' | 'scenario'>[],
  raw: Record<string, unknown>,
  notes: string[] = [],
): Promise<ScenarioOutput> {
  const audit: AuditResult = await auditLedger(ctx.infra.sql);
  const reasons = verdicts.flatMap((v) => v.reasons);
  if (audit.invariantViolations) reasons.push(`${audit.invariantViolations} ledger invariant violations`);
  if (audit.duplicateKeys) reasons.push(`${audit.duplicateKeys} doubled request keys`);
  const ok = reasons.length === 0;
  const status = ok ? 'PASS' : 'FAILED';
  for (const r of reasons) notes.push(`FAILED: ${r}`);
  return {
    name,
    ok,
    rows: rows.map((r) => ({ ...r, scenario: name, status })),
    raw: { ...raw, audit, credits: verdicts.flatMap((v) => (v.credits ? [v.credits] : [])) },
    notes,
  };
}

/** Strip the id lists (kept only for the checks) from what goes into the JSON file. */
export function lean<T extends { payoutIds: string[] }>(r: T): Omit<T, 'payoutIds'> & { payoutIdCount: number } {
  const { payoutIds, ...rest } = r;
  return { ...rest, payoutIdCount: payoutIds.length };
}
