import { audit } from '@quest/db/audit';
import type { FastifyInstance } from 'fastify';
import { type ConsoleContext, consolePath, OPERATOR } from '../context.ts';
import { fmt, type Html, html } from '../html.ts';

function auditResult(report: Awaited<ReturnType<typeof audit>>): Html {
  const c = report.checked;
  const v = report.violations;
  const rows = [
    ...report.quests.map((q) => html`<li>Quest ${q.questId}: ${q.problems.join('; ')} (discrepancy ${fmt(q.discrepancy)})</li>`),
    ...report.accounts.map((a) => html`<li>Account <code>${a.pass}</code>: ${a.problems.join('; ')}</li>`),
    ...report.payouts.map((p) => html`<li>Payout <code>${p.payoutId}</code>: ${p.problems.join('; ')}</li>`),
  ];
  return html`<section class="panel" role="status" aria-labelledby="audit-result-h">
    <h2 id="audit-result-h">${report.ok ? 'The ledger is consistent' : 'The ledger has violations'}</h2>
    <p>Checked ${fmt(c.quests)} quests, ${fmt(c.accounts)} accounts, ${fmt(c.payouts)} payouts (${fmt(c.pointsPaidOut)} points)
      and ${fmt(c.reversals)} reversals (${fmt(c.pointsReversed)} points).</p>
    ${report.ok ? '' : html`<p class="error">Violations: ${fmt(v.quests)} quests, ${fmt(v.accounts)} accounts, ${fmt(v.payouts)} payouts.</p><ul>${rows}</ul>`}
  </section>`;
}

/** The operator's ledger audit (as `quest-admin audit`), run on request: it reads the whole ledger. */
export function operatorAuditRoutes(app: FastifyInstance, ctx: ConsoleContext): void {
  app.get('/operator/audit', OPERATOR, async (request, reply) => {
    const run = (request.query as { run?: string }).run === '1';
    const result = run ? auditResult(await audit(ctx.deps.sql, { limit: 20 })) : '';
    const body = html`<p>The audit checks every quest's budget against its payouts and reversals, every account's balance,
        and that no payout is reversed beyond its amount (as <code>quest-admin audit</code> does). It reads the whole ledger.</p>
      <form method="get" action="${consolePath('operator', 'audit')}"><input type="hidden" name="run" value="1">
        <button type="submit">Run the audit</button></form>${result}`;
    return ctx.page(reply, { title: 'Audit', request, body });
  });
}
