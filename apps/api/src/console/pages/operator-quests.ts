import { getOwnerQuest } from '@quest/db';
import { createQuest, listCampaigns, listQuests, setQuestActionStatus, setQuestWindow } from '@quest/db/catalog';
import { listOwners } from '@quest/db/owners';
import { ACTION_STATUSES, type ActionStatus, DomainError } from '@quest/domain';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type ConsoleContext, consolePath, OPERATOR } from '../context.ts';
import { dateField, field, formOf, intField, localValue } from '../forms.ts';
import { budgetBar, csrfField, fmt, type Html, html, type Viewer, when } from '../html.ts';
import { pathQuestId } from '../ids.ts';

type Owner = Awaited<ReturnType<typeof listOwners>>['items'][number];
type Campaign = Awaited<ReturnType<typeof listCampaigns>>['items'][number];
type Quest = Awaited<ReturnType<typeof listQuests>>['items'][number];

const DAY_MS = 86_400_000;

function newQuestForm(viewer: Viewer, owners: readonly Owner[], campaigns: readonly Campaign[]): Html {
  const now = new Date();
  return html`<section class="panel" aria-labelledby="new-quest-h">
    <h2 id="new-quest-h">New quest</h2>
    <form method="post" action="${consolePath('operator', 'quests')}" class="stack">
      ${csrfField(viewer)}
      <label for="quest-owner">Owner</label>
      <select id="quest-owner" name="ownerId" required>${owners.map((o) => html`<option value="${o.id}">${o.name} (${o.id})</option>`)}</select>
      <label for="quest-campaign">Campaign (optional)</label>
      <select id="quest-campaign" name="campaignId"><option value="">None</option>${campaigns.map(
        (c) => html`<option value="${c.id}">${c.name} (#${c.id})</option>`,
      )}</select>
      <label for="quest-name">Name</label><input id="quest-name" name="name" type="text" required maxlength="200">
      <label for="quest-total">Total points</label><input id="quest-total" name="totalPoints" type="number" min="1" required>
      <label for="quest-expected">Expected points per completion</label>
      <input id="quest-expected" name="expectedPointsPerCompletion" type="number" min="0" value="0" required>
      <label for="quest-start">Start (UTC)</label><input id="quest-start" name="startAt" type="datetime-local" value="${localValue(now)}" required>
      <label for="quest-end">End (UTC)</label><input id="quest-end" name="endAt" type="datetime-local" value="${localValue(new Date(now.getTime() + 30 * DAY_MS))}" required>
      <div><button type="submit">Create quest</button></div>
    </form>
  </section>`;
}

function questRow(viewer: Viewer, q: Quest, ownerName: string): Html {
  const active = q.actionStatus === 'active';
  return html`<tr><td>${q.name} <span class="muted">#${q.id}</span></td><td class="opt">${ownerName}</td>
    <td class="opt">${when(q.startAt)} → ${when(q.endAt)}
      <a href="${consolePath('operator', 'quests', q.id, 'window')}" aria-label="Edit the window of quest ${q.name}">Edit</a></td>
    <td>${budgetBar(q.pointsRemaining, q.totalPoints, `Points remaining of quest ${q.name}`)}</td>
    <td>${q.actionStatus}
      <form method="post" action="${consolePath('operator', 'quests', q.id, 'action-status')}" class="inline">${csrfField(viewer)}
        <input type="hidden" name="status" value="${active ? 'deactivated' : 'active'}">
        <button type="submit" class="link" aria-label="${active ? 'Deactivate' : 'Activate'} quest ${q.name}">${active ? 'Deactivate' : 'Activate'}</button>
      </form></td></tr>`;
}

/** Every quest, each with its owner's name, under the new-quest form and `note`. */
async function questsPage(ctx: ConsoleContext, request: FastifyRequest, note?: Html): Promise<Html> {
  const viewer = ctx.viewer(request)!;
  const { sql } = ctx.deps;
  const [owners, quests, campaigns] = await Promise.all([
    listOwners(sql, { limit: 500 }),
    listQuests(sql, { limit: 500 }),
    listCampaigns(sql, { limit: 500 }),
  ]);
  const nameOf = new Map(owners.items.map((o) => [o.id, o.name]));
  return html`${note ?? ''}${newQuestForm(viewer, owners.items, campaigns.items)}
    <h2>Quests</h2>
    <div class="table-wrap"><table>
      <thead><tr><th scope="col">Quest</th><th scope="col" class="opt">Owner</th><th scope="col" class="opt">Window</th><th scope="col">Budget</th><th scope="col">Action status</th></tr></thead>
      <tbody>${quests.items.map((q) => questRow(viewer, q, nameOf.get(q.ownerId) ?? q.ownerId))}</tbody>
    </table></div>`;
}

async function windowForm(ctx: ConsoleContext, request: FastifyRequest): Promise<Html> {
  const quest = await getOwnerQuest(ctx.deps.sql, pathQuestId(request));
  if (!quest) throw new DomainError('QUEST_NOT_FOUND');
  return html`<p>Quest <strong>${quest.name}</strong> (#${quest.id}). Credits are accepted from the start (inclusive) to the
      end (exclusive); the next decision follows the new window.</p>
    <form method="post" action="${consolePath('operator', 'quests', quest.id, 'window')}" class="stack">
      ${csrfField(ctx.viewer(request)!)}
      <label for="window-start">Start (UTC)</label>
      <input id="window-start" name="startAt" type="datetime-local" value="${localValue(quest.startAt)}" required>
      <label for="window-end">End (UTC)</label>
      <input id="window-end" name="endAt" type="datetime-local" value="${localValue(quest.endAt)}" required>
      <div><button type="submit">Save window</button> <a href="${consolePath('operator', 'quests')}" class="button secondary">Cancel</a></div>
    </form>`;
}

/**
 * The operator's quests: create one, switch its action status, move its window. Writes go
 * through @quest/db's admin modules, as quest-admin's do.
 */
export function operatorQuestRoutes(app: FastifyInstance, ctx: ConsoleContext): void {
  const { sql } = ctx.deps;
  const show = async (request: FastifyRequest, reply: FastifyReply, note?: Html) =>
    ctx.page(reply, { title: 'Quests', request, body: await questsPage(ctx, request, note) });

  app.get('/operator/quests', OPERATOR, async (request, reply) => show(request, reply));

  app.post('/operator/quests', OPERATOR, async (request, reply) => {
    const form = formOf(request);
    const campaign = field(form, 'campaignId');
    const quest = await createQuest(sql, {
      ownerId: field(form, 'ownerId'),
      campaignId: campaign === '' ? null : intField(form, 'campaignId', 'Campaign'),
      name: field(form, 'name'),
      totalPoints: intField(form, 'totalPoints', 'Total points'),
      expectedPointsPerCompletion: intField(form, 'expectedPointsPerCompletion', 'Expected points per completion'),
      startAt: dateField(form, 'startAt', 'Start'),
      endAt: dateField(form, 'endAt', 'End'),
    });
    request.log.info({ console: 'quest created', questId: quest.id }, 'console: quest created');
    return show(
      request,
      reply,
      html`<p class="flash" role="status">Quest <strong>${quest.name}</strong> created with id ${quest.id} and a budget of ${fmt(quest.totalPoints)} points.</p>`,
    );
  });

  app.post('/operator/quests/:questId/action-status', OPERATOR, async (request, reply) => {
    const status = field(formOf(request), 'status') as ActionStatus;
    if (!ACTION_STATUSES.includes(status))
      throw new DomainError('VALIDATION_FAILED', `Status must be one of ${ACTION_STATUSES.join(', ')}.`);
    const quest = await setQuestActionStatus(sql, pathQuestId(request), status);
    request.log.info({ console: 'quest action status', questId: quest.id, status }, 'console: quest action status set');
    return show(
      request,
      reply,
      html`<p class="flash" role="status">Quest <strong>${quest.name}</strong> is now ${quest.actionStatus}.</p>`,
    );
  });

  app.get('/operator/quests/:questId/window', OPERATOR, async (request, reply) =>
    ctx.page(reply, { title: 'Edit a quest window', request, body: await windowForm(ctx, request) }),
  );

  app.post('/operator/quests/:questId/window', OPERATOR, async (request, reply) => {
    const form = formOf(request);
    const quest = await setQuestWindow(
      sql,
      pathQuestId(request),
      dateField(form, 'startAt', 'Start'),
      dateField(form, 'endAt', 'End'),
    );
    request.log.info({ console: 'quest window', questId: quest.id }, 'console: quest window set');
    const note = html`<p class="flash" role="status">Quest <strong>${quest.name}</strong> now runs ${when(quest.startAt)} → ${when(quest.endAt)}.</p>`;
    return show(request, reply, note);
  });
}
