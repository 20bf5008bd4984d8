import { listOwnerQuests, type OwnerQuestRow } from '@quest/db';
import { type ActionStatus, isQuestActive } from '@quest/domain';
import type { FastifyInstance } from 'fastify';
import { type ConsoleContext, consolePath, OWNER } from '../context.ts';
import { budgetBar, fmt, html, when } from '../html.ts';
import { ownQuest, questQuery } from '../own-quest.ts';
import { batchSection } from './batches.ts';
import { payoutResults, payoutSection } from './payouts.ts';
import { periodOf, questCharts } from './quest-charts.ts';

export const isActive = (q: OwnerQuestRow, now: Date) =>
  isQuestActive({ ...q, actionStatus: q.actionStatus as ActionStatus }, now);

const questRow = (q: OwnerQuestRow, now: Date) => html`<tr>
  <td><a href="${consolePath('quests', q.id)}">${q.name}</a> <span class="muted">#${q.id}</span></td>
  <td class="opt">${when(q.startAt)} → ${when(q.endAt)}</td>
  <td>${isActive(q, now) ? 'Active' : 'Not active'}</td>
  <td>${budgetBar(q.pointsRemaining, q.totalPoints, `Points remaining of quest ${q.name}`)}</td>
</tr>`;

const budgetPanel = (quest: OwnerQuestRow) => html`<section class="panel" aria-labelledby="budget-h">
  <h2 id="budget-h">Budget</h2>
  <div class="bar"><meter data-quest="${quest.id}" min="0" max="${quest.totalPoints}" value="${quest.pointsRemaining}" aria-label="Points remaining"></meter>
  <span><strong data-remaining-of="${quest.id}" id="points-remaining">${fmt(quest.pointsRemaining)}</strong> of ${fmt(quest.totalPoints)} points remaining</span></div>
  <p>Window: ${when(quest.startAt)} → ${when(quest.endAt)}. ${isActive(quest, new Date()) ? 'Active now.' : 'Not active now.'}
    Action status: ${quest.actionStatus}.</p>
</section>`;

/** What the quest page says above it after a reversal (the form redirects here with the outcome). */
function reversalFlash(quest: OwnerQuestRow, query: { reversed?: unknown; reversal?: unknown }): string | undefined {
  if (typeof query.reversed === 'string' && /^\d+$/.test(query.reversed))
    return `Reversed ${fmt(Number(query.reversed))} points: ${fmt(quest.pointsRemaining)} points are left in the budget.`;
  if (query.reversal === 'pending') return 'The reversal is queued; reload in a moment to see the budget return.';
  return undefined;
}

/**
 * The owner's quests, and a quest's page: its budget, charts over a period, CSV upload and batches,
 * and its recent payouts (each with a way to reverse it).
 */
export function ownerQuestRoutes(app: FastifyInstance, ctx: ConsoleContext): void {
  const { sql } = ctx.deps;

  app.get('/quests', OWNER, async (request, reply) => {
    const quests = await listOwnerQuests(sql, ctx.owner(request).ownerId);
    const now = new Date();
    const body =
      quests.length === 0
        ? html`<p>You have no quests yet. An operator creates them.</p>`
        : html`<div class="table-wrap"><table>
          <caption class="muted">Your quests, newest first</caption>
          <thead><tr><th scope="col">Quest</th><th scope="col" class="opt">Window</th><th scope="col">Active</th><th scope="col">Budget</th></tr></thead>
          <tbody>${quests.map((q) => questRow(q, now))}</tbody></table></div>`;
    return ctx.page(reply, { title: 'My quests', request, body });
  });

  app.get('/quests/:questId', OWNER, async (request, reply) => {
    const quest = await ownQuest(ctx, request);
    const { period, search } = questQuery(request);
    const [charts, batches, payouts] = await Promise.all([
      questCharts(sql, quest, periodOf(period)),
      batchSection(sql, quest),
      payoutResults(sql, quest, search),
    ]);
    const body = html`<p class="muted">${quest.description}</p>
      <div class="grid">${budgetPanel(quest)}
        <section class="panel" aria-labelledby="chart-h" id="quest-charts">${charts}</section>
      </div>
      ${batches}
      ${payoutSection(quest, search, payouts)}`;
    const flash = reversalFlash(quest, request.query as Record<string, unknown>);
    return ctx.page(reply, { title: quest.name, request, body, ...(flash ? { flash } : {}) });
  });
}
