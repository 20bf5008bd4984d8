import { type AuditResult, auditLedger, checkCredits, waitForDrain } from './audit.ts';
import type { BatchHttpResult } from './batch-http.ts';
import type { ScenarioName } from './config.ts';
import type { BaseCtx, Ctx, ScenarioOutput, Verdict } from './context.ts';
import type { CreditCliResult } from './credit-cli.ts';
import type { DirectResult } from './direct.ts';
import type { LoadResult } from './http-load.ts';
import type { Row } from './stats.ts';

/**
 * The correctness checks every scenario ends with (exact payouts, nothing doubled, the ledger's
 * invariants), and the scenario's output built from them.
 */

export function sumValues(o: Record<string, number>): number {
  return Object.values(o).reduce((a, b) => a + b, 0);
}

export async function verifyLoad(ctx: Ctx, questIds: number[], load: LoadResult): Promise<Verdict> {
  const reasons: string[] = [];
  if (load.accepted202 > 0) {
    const drained = await waitForDrain(ctx.infra.redis, ctx.infra.prefix, ctx.cfg.partitions, 60_000);
    if (!drained) reasons.push('queues did not drain within 60 s');
  }
  const inFlightAtStop = Math.max(0, load.sent - load.received);
  const credits = await checkCredits(ctx.infra.sql, questIds, load.payoutIds, inFlightAtStop + load.accepted202);
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
