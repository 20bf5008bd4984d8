import { randomUUID } from 'node:crypto';
import {
  getBatch,
  getConsolePayout,
  getOwnerQuest,
  listBatchRejections,
  listOwnerQuests,
  listQuestBatches,
  listRecentPayouts,
  type OwnerQuestRow,
  questActivity,
} from '@quest/db';
import { type ActionStatus, DomainError, isQuestActive, passAddressLowerSchema } from '@quest/domain';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { bodyOf } from '../commands/answer.ts';
import { batchSummary } from '../schemas/batches.ts';
import { sessionCaller } from './caller.ts';
import { failedRowsOfUpload, parseCreditCsv } from './csv.ts';
import { barChart, budgetBar, csrfField, fmt, html, lineChart, when } from './html.ts';
import type { ConsoleContext } from './context.ts';
import { webhookRoutes } from './webhooks.ts';

const owner = { config: { consoleRole: 'owner' as const } };

/** The periods a quest's charts cover, each in buckets of `bucket` minutes. */
const PERIODS = [
  { id: '1h', label: '1 h', minutes: 60, bucket: 1, bucketLabel: 'minute' },
  { id: '24h', label: '24 h', minutes: 24 * 60, bucket: 15, bucketLabel: '15 minutes' },
  { id: '7d', label: '7 days', minutes: 7 * 24 * 60, bucket: 120, bucketLabel: '2 hours' },
] as const;

/** A path's quest id; anything that is not one is a quest that does not exist. */
export function intParam(value: unknown): number {
  if (typeof value !== 'string' || !/^[1-9]\d{0,8}$/.test(value)) throw new DomainError('QUEST_NOT_FOUND');
  return Number(value);
}

const isActive = (q: OwnerQuestRow, now: Date) => isQuestActive({ ...q, actionStatus: q.actionStatus as ActionStatus }, now);

/**
 * The owner's views: their quests, a quest's page (budget, charts, payouts with reversal, batches
 * and CSV upload), and the JSON the page's script polls for live progress. Every quest is checked
 * to be the signed-in owner's; another owner's quest is answered as not found.
 */
export function ownerRoutes(app: FastifyInstance, ctx: ConsoleContext): void {
  const { deps } = ctx;

  async function ownQuest(request: FastifyRequest): Promise<{ ownerId: string; quest: OwnerQuestRow }> {
    const session = ctx.owner(request);
    const questId = intParam((request.params as { questId?: string }).questId);
    const quest = await getOwnerQuest(deps.sql, questId);
    if (!quest || quest.ownerId !== session.ownerId) throw new DomainError('QUEST_NOT_FOUND');
    return { ownerId: session.ownerId, quest };
  }

  app.get('/quests', owner, async (request, reply) => {
    const session = ctx.owner(request);
    const quests = await listOwnerQuests(deps.sql, session.ownerId);
    const now = new Date();
    const body =
      quests.length === 0
        ? html`<p>You have no quests yet. An operator creates them.</p>`
        : html`<div class="table-wrap"><table>
          <caption class="muted">Your quests, newest first</caption>
          <thead><tr><th scope="col">Quest</th><th scope="col" class="opt">Window</th><th scope="col">Active</th><th scope="col">Budget</th></tr></thead>
          <tbody>${quests.map(
            (q) => html`<tr>
              <td><a href="/console/quests/${q.id}">${q.name}</a> <span class="muted">#${q.id}</span></td>
              <td class="opt">${when(q.startAt)} → ${when(q.endAt)}</td>
              <td>${isActive(q, now) ? 'Active' : 'Not active'}</td>
              <td>${budgetBar(q.pointsRemaining, q.totalPoints, `Points remaining of quest ${q.name}`)}</td>
            </tr>`,
          )}</tbody></table></div>`;
    return ctx.page(reply, { title: 'My quests', request, body });
  });

  app.get('/quests/:questId', owner, async (request, reply) => {
    const { quest } = await ownQuest(request);
    const query = request.query as { address?: string; reversed?: string; reversal?: string; period?: string };
    const period = PERIODS.find((p) => p.id === query.period) ?? PERIODS[0]!;
    const search = typeof query.address === 'string' ? query.address.trim() : '';
    const address = search ? passAddressLowerSchema.safeParse(search) : undefined;
    const [payouts, batches, activity] = await Promise.all([
      address && !address.success ? [] : listRecentPayouts(deps.sql, quest.id, { address: address?.data, limit: 25 }),
      listQuestBatches(deps.sql, quest.id, 20),
      questActivity(deps.sql, quest.id, period.minutes, period.bucket),
    ]);
    const now = new Date();

    // Budget at the end of each bucket of the period: now's, plus what was spent since.
    const bucketMs = period.bucket * 60_000;
    const startMs = now.getTime() - period.minutes * 60_000;
    let remaining = quest.pointsRemaining;
    const budget: { x: number; y: number }[] = [{ x: now.getTime(), y: remaining }];
    for (const m of [...activity].reverse()) {
      budget.push({ x: Math.min(now.getTime(), m.start.getTime() + bucketMs), y: remaining });
      remaining += m.points - m.reversed;
      budget.push({ x: Math.max(startMs, m.start.getTime()), y: remaining });
    }
    budget.push({ x: startMs, y: remaining });
    budget.sort((a, b) => a.x - b.x);
    // One bar per bucket of the period, empty ones included.
    const first = Math.floor(startMs / bucketMs) + 1;
    const count = Math.round(period.minutes / period.bucket);
    const byBucket = new Map(activity.map((m) => [Math.floor(m.start.getTime() / bucketMs), m.credits]));
    const perBucket = Array.from({ length: count }, (_, i) => ({
      label: when(new Date((first + i) * bucketMs)),
      value: byBucket.get(first + i) ?? 0,
    }));
    const creditsInPeriod = activity.reduce((n, m) => n + m.credits, 0);

    let flash: string | undefined;
    if (query.reversed && /^\d+$/.test(query.reversed))
      flash = `Reversed ${fmt(Number(query.reversed))} points: ${fmt(quest.pointsRemaining)} points are left in the budget.`;
    else if (query.reversal === 'pending') flash = 'The reversal is queued; reload in a moment to see the budget return.';

    const failedUrl = (batchId: string) => `/console/quests/${quest.id}/batches/${batchId}/failed.csv`;
    const batchRow = (b: (typeof batches)[number]) => {
      const done = b.status === 'completed' || b.status === 'failed';
      return html`<tr ${done ? html`data-batch-done="${b.status}"` : html`data-batch-url="/console/api/quests/${quest.id}/batches/${b.id}"`}>
        <td><code data-batch-id>${b.id}</code><br><span class="muted">${when(b.created_at)}</span></td>
        <td><span data-batch-status class="status-${b.status}">${b.status}</span></td>
        <td><progress max="${b.total}" value="${b.processed}" aria-label="Progress of batch ${b.id}"></progress>
          <span data-batch-text>${fmt(b.processed)} of ${fmt(b.total)} processed, ${fmt(b.succeeded)} credited, ${fmt(b.failed)} failed</span></td>
        <td><a data-failed-link href="${failedUrl(b.id)}" download ${b.failed > 0 ? '' : html`hidden`}>Failed rows (CSV)</a></td>
      </tr>`;
    };

    const body = html`
      <p class="muted">${quest.description}</p>
      <div class="grid">
        <section class="panel" aria-labelledby="budget-h">
          <h2 id="budget-h">Budget</h2>
          <div class="bar"><meter data-quest="${quest.id}" min="0" max="${quest.totalPoints}" value="${quest.pointsRemaining}" aria-label="Points remaining"></meter>
          <span><strong data-remaining-of="${quest.id}" id="points-remaining">${fmt(quest.pointsRemaining)}</strong> of ${fmt(quest.totalPoints)} points remaining</span></div>
          <p>Window: ${when(quest.startAt)} → ${when(quest.endAt)}. ${isActive(quest, now) ? 'Active now.' : 'Not active now.'}
            Action status: ${quest.actionStatus}.</p>
        </section>
        <section class="panel" aria-labelledby="chart-h">
          <h2 id="chart-h">Budget, last ${period.label}</h2>
          <nav aria-label="Chart period" class="periods">${PERIODS.map((p) =>
            p.id === period.id
              ? html`<a href="?period=${p.id}" aria-current="page">${p.label}</a>`
              : html`<a href="?period=${p.id}">${p.label}</a>`,
          )}</nav>
          ${lineChart(budget, {
            label: `Points remaining over the last ${period.label}, from ${fmt(budget[0]!.y)} to ${fmt(quest.pointsRemaining)} now`,
            from: `${period.label} ago`,
            to: 'now',
          })}
          <h2>Credits per ${period.bucketLabel}</h2>
          <p class="muted">${fmt(creditsInPeriod)} credits in the last ${period.label}.</p>
          ${barChart(perBucket, {
            label: `Credits per ${period.bucketLabel} over the last ${period.label}: ${fmt(creditsInPeriod)} in all`,
            from: `${period.label} ago`,
            to: 'now',
          })}
        </section>
      </div>

      <section aria-labelledby="upload-h">
        <h2 id="upload-h">Credit from a CSV file</h2>
        <form id="upload" method="post" action="/console/quests/${quest.id}/credit" class="stack" enctype="text/csv">
          <label for="csv">CSV file: the header <code>address,points</code> on line 1, then one row per line</label>
          <input id="csv" name="csv" type="file" accept=".csv,text/csv" required>
          <div><button type="submit">Upload and credit</button></div>
          <progress id="upload-progress" hidden max="1" value="0" aria-label="Upload progress"></progress>
          <p id="upload-message" aria-live="polite"></p>
        </form>
      </section>

      <section aria-labelledby="batches-h">
        <h2 id="batches-h">Batches</h2>
        <div class="table-wrap"><table>
          <thead><tr><th scope="col">Batch</th><th scope="col">Status</th><th scope="col">Progress</th><th scope="col">Failed rows</th></tr></thead>
          <tbody id="batch-rows">${batches.map(batchRow)}</tbody>
        </table></div>
        ${batches.length === 0 ? html`<p id="no-batches" class="muted">No batches yet.</p>` : ''}
        <template id="batch-row-template"><tr>
          <td><code data-batch-id></code></td>
          <td><span data-batch-status>pending</span></td>
          <td><progress max="1" value="0" aria-label="Batch progress"></progress> <span data-batch-text>Queued</span></td>
          <td><a data-failed-link href="#" download hidden>Failed rows (CSV)</a></td>
        </tr></template>
      </section>

      <section aria-labelledby="payouts-h">
        <h2 id="payouts-h">Recent payouts</h2>
        <form method="get" action="/console/quests/${quest.id}" role="search" class="stack">
          <label for="address">Find the payouts of an address</label>
          <input id="address" name="address" type="search" value="${search}" placeholder="0x…" maxlength="42">
          <div><button type="submit" class="secondary">Search</button> ${search ? html`<a href="/console/quests/${quest.id}">Show all</a>` : ''}</div>
        </form>
        ${address && !address.success ? html`<p role="alert" class="error">That is not an address (0x followed by 40 hexadecimal digits).</p>` : ''}
        ${
          payouts.length === 0
            ? html`<p class="muted">No payouts${search ? ' for this address' : ''}.</p>`
            : html`<div class="table-wrap"><table>
          <thead><tr><th scope="col" class="opt">When</th><th scope="col">Address</th><th scope="col" class="num">Points</th><th scope="col" class="num opt">Reversed</th><th scope="col">Action</th></tr></thead>
          <tbody>${payouts.map(
            (p) => html`<tr>
              <td class="opt">${when(p.createdAt)}</td>
              <td><code>${p.pass}</code></td>
              <td class="num">${fmt(p.amount)}</td>
              <td class="num opt">${fmt(p.reversed)}</td>
              <td>${
                p.reversed < p.amount
                  ? html`<a href="/console/quests/${quest.id}/payouts/${p.id}/reverse" aria-label="Reverse payout ${p.id} of ${fmt(p.amount)} points to ${p.pass}">Reverse…</a>`
                  : html`<span class="muted">Reversed</span>`
              }</td>
            </tr>`,
          )}</tbody></table></div>`
        }
      </section>`;
    return ctx.page(reply, { title: quest.name, request, body, ...(flash ? { flash } : {}) });
  });

  app.get('/quests/:questId/payouts/:payoutId/reverse', owner, async (request, reply) => {
    const { quest } = await ownQuest(request);
    const viewer = ctx.viewer(request)!;
    const payoutId = String((request.params as { payoutId: string }).payoutId);
    const payout = await getConsolePayout(deps.sql, quest.id, payoutId);
    if (!payout) throw new DomainError('PAYOUT_NOT_FOUND');
    const left = payout.amount - payout.reversed;
    const body = html`
      <p>Payout <code>${payout.id}</code> credited <strong>${fmt(payout.amount)}</strong> points to <code>${payout.pass}</code>
        on ${when(payout.createdAt)}${payout.reversed ? html`; ${fmt(payout.reversed)} of them were reversed already` : ''}.</p>
      <p>Reversing takes the points back from the account and returns them to the quest's budget
        (now ${fmt(quest.pointsRemaining)} of ${fmt(quest.totalPoints)}).</p>
      <form method="post" action="/console/quests/${quest.id}/payouts/${payout.id}/reverse" class="stack">
        ${csrfField(viewer)}
        <input type="hidden" name="idempotencyKey" value="${randomUUID()}">
        <label for="points">Points to reverse (at most ${fmt(left)})</label>
        <input id="points" name="points" type="number" min="1" max="${left}" value="${left}" required>
        <label for="reason">Reason (optional)</label>
        <input id="reason" name="reason" type="text" maxlength="500">
        <div><button type="submit" class="danger">Confirm reversal</button> <a href="/console/quests/${quest.id}" class="button secondary">Cancel</a></div>
      </form>`;
    return ctx.page(reply, { title: 'Reverse a payout?', request, body });
  });

  app.post('/quests/:questId/payouts/:payoutId/reverse', owner, async (request, reply) => {
    const questId = intParam((request.params as { questId?: string }).questId);
    const payoutId = String((request.params as { payoutId: string }).payoutId);
    const form = (request.body ?? {}) as { points?: string; reason?: string; idempotencyKey?: string };
    const points = form.points && form.points !== '' ? Number(form.points) : undefined;
    if (points !== undefined && (!Number.isSafeInteger(points) || points < 1))
      throw new DomainError('VALIDATION_FAILED', 'Points must be a whole number of at least 1.');
    const reason = typeof form.reason === 'string' && form.reason.trim() !== '' ? form.reason.trim().slice(0, 500) : undefined;
    const idempotencyKey =
      typeof form.idempotencyKey === 'string' && /^[0-9a-f-]{36}$/.test(form.idempotencyKey) ? form.idempotencyKey : undefined;
    const input = { questId, payoutId, points, reason, idempotencyKey };
    const { status, body } = bodyOf(await deps.commands.reverse(sessionCaller(ctx, request, reply), input));
    const outcome = status === 202 ? 'reversal=pending' : `reversed=${'amount' in body.reversal ? body.reversal.amount : 0}`;
    return reply.redirect(`/console/quests/${questId}?${outcome}`, 303);
  });

  // The CSV upload (the page's script sends the file as text/csv, with the CSRF token in a header).
  app.post('/quests/:questId/credit', owner, async (request, reply) => {
    const questId = intParam((request.params as { questId?: string }).questId);
    if (typeof request.body !== 'string') throw new DomainError('UNSUPPORTED_MEDIA_TYPE', 'Send the file as text/csv.');
    const items = await parseCreditCsv(request.body);
    const uploadId = request.headers['x-upload-id'];
    const idempotencyKey =
      typeof uploadId === 'string' && /^[A-Za-z0-9_-]{8,100}$/.test(uploadId) ? `console-${uploadId}` : undefined;
    const input = { questId, items, idempotencyKey, respondAsync: true };
    const answer = await deps.commands.createBatch(sessionCaller(ctx, request, reply), input);
    if (!answer.ok && answer.error.code === 'ALLOCATION_FAILED') {
      const { processed } = answer.error.details as { processed: number };
      throw new DomainError(
        'ALLOCATION_FAILED',
        `The batch stopped after ${fmt(processed)} of ${fmt(items.length)} rows; upload the file again to resume.`,
      );
    }
    const { status, body } = bodyOf(answer);
    const { results: _, ...batch } = body.batch;
    return reply.code(status).send({
      batch,
      statusUrl: `/console/api/quests/${questId}/batches/${batch.id}`,
      failedUrl: `/console/quests/${questId}/batches/${batch.id}/failed.csv`,
    });
  });

  app.get('/api/quests/:questId/batches/:batchId', owner, async (request) => {
    const { quest } = await ownQuest(request);
    const row = await getBatch(deps.sql, quest.id, String((request.params as { batchId: string }).batchId));
    if (!row) throw new DomainError('BATCH_NOT_FOUND');
    const fresh = await getOwnerQuest(deps.sql, quest.id);
    return {
      batch: batchSummary(row),
      quest: { id: quest.id, points_remaining: fresh?.pointsRemaining ?? quest.pointsRemaining, total_points: quest.totalPoints },
    };
  });

  app.get('/quests/:questId/batches/:batchId/failed.csv', owner, async (request, reply) => {
    const { quest } = await ownQuest(request);
    const batchId = String((request.params as { batchId: string }).batchId);
    const row = await getBatch(deps.sql, quest.id, batchId);
    if (!row) throw new DomainError('BATCH_NOT_FOUND');
    const rejected = await listBatchRejections(deps.sql, batchId);
    return reply
      .type('text/csv; charset=utf-8')
      .header('content-disposition', `attachment; filename="${batchId.replace(/[^A-Za-z0-9_-]/g, '')}-failed.csv"`)
      .send(failedRowsOfUpload(rejected));
  });

  webhookRoutes(app, ctx);
}
