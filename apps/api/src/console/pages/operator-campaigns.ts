import { createCampaign, listCampaigns } from '@quest/db/catalog';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type ConsoleContext, consolePath, OPERATOR } from '../context.ts';
import { dateField, field, formOf, localValue } from '../forms.ts';
import { csrfField, fmt, type Html, html, type Viewer, when } from '../html.ts';

type Campaign = Awaited<ReturnType<typeof listCampaigns>>['items'][number];

function newCampaignForm(viewer: Viewer): Html {
  const now = new Date();
  return html`<section class="panel" aria-labelledby="new-campaign-h">
    <h2 id="new-campaign-h">New campaign</h2>
    <form method="post" action="${consolePath('operator', 'campaigns')}" class="stack">
      ${csrfField(viewer)}
      <label for="campaign-name">Name</label><input id="campaign-name" name="name" type="text" required maxlength="200">
      <label for="campaign-description">Description (optional)</label>
      <input id="campaign-description" name="description" type="text" maxlength="2000">
      <label for="campaign-start">Start (UTC)</label><input id="campaign-start" name="startAt" type="datetime-local" value="${localValue(now)}" required>
      <label for="campaign-end">End (UTC)</label>
      <input id="campaign-end" name="endAt" type="datetime-local" value="${localValue(new Date(now.getTime() + 30 * 86_400_000))}" required>
      <div><button type="submit">Create campaign</button></div>
    </form>
  </section>`;
}

const campaignTable = (campaigns: readonly Campaign[]) =>
  campaigns.length === 0
    ? html`<p class="muted">No campaigns yet.</p>`
    : html`<div class="table-wrap"><table>
      <thead><tr><th scope="col">Campaign</th><th scope="col" class="opt">Window</th><th scope="col" class="num">Quests</th><th scope="col">Active</th></tr></thead>
      <tbody>${campaigns.map(
        (
          c,
        ) => html`<tr><td>${c.name} <span class="muted">#${c.id}</span></td><td class="opt">${when(c.startAt)} → ${when(c.endAt)}</td>
          <td class="num">${fmt(c.quests)}</td><td>${c.isActive ? 'yes' : 'no'}</td></tr>`,
      )}</tbody></table></div>`;

/** The operator's campaigns: the list, and a new one (through @quest/db's admin modules). */
export function operatorCampaignRoutes(app: FastifyInstance, ctx: ConsoleContext): void {
  const { sql } = ctx.deps;
  const show = async (request: FastifyRequest, reply: FastifyReply, note?: Html) => {
    const campaigns = await listCampaigns(sql, { limit: 500 });
    const body = html`${note ?? ''}${newCampaignForm(ctx.viewer(request)!)}<h2>Campaigns</h2>${campaignTable(campaigns.items)}`;
    return ctx.page(reply, { title: 'Campaigns', request, body });
  };

  app.get('/operator/campaigns', OPERATOR, async (request, reply) => show(request, reply));

  app.post('/operator/campaigns', OPERATOR, async (request, reply) => {
    const form = formOf(request);
    const campaign = await createCampaign(sql, {
      name: field(form, 'name'),
      description: field(form, 'description'),
      startAt: dateField(form, 'startAt', 'Start'),
      endAt: dateField(form, 'endAt', 'End'),
    });
    request.log.info({ console: 'campaign created', campaignId: campaign.id }, 'console: campaign created');
    const note = html`<p class="flash" role="status">Campaign <strong>${campaign.name}</strong> created with id ${campaign.id}.</p>`;
    return show(request, reply, note);
  });
}
