import { deleteConsoleSessionsOfKey, FEATURES, type Feature, getFeatureFlags, getOwnerQuest, setFeatureFlags } from '@quest/db';
import { audit } from '@quest/db/audit';
import { importAccounts } from '@quest/db/accounts';
import { createCampaign, createQuest, listCampaigns, listQuests, setQuestActionStatus, setQuestWindow } from '@quest/db/catalog';
import { createApiKey, listApiKeys, revokeKey } from '@quest/db/keys';
import { createOwner, listOwners } from '@quest/db/owners';
import { ACTION_STATUSES, type ActionStatus, DomainError } from '@quest/domain';
import type { FastifyInstance } from 'fastify';
import { budgetBar, csrfField, fmt, type Html, html, when } from './html.ts';
import type { ConsoleContext } from './context.ts';
import { parseAccountCsv } from './csv.ts';

export const operator = { config: { consoleRole: 'operator' as const } };

type Form = Record<string, string | undefined>;
const field = (form: Form, name: string) => (typeof form[name] === 'string' ? form[name].trim() : '');

/** A whole number from a form field, or a 400 naming the field. */
function intField(form: Form, name: string, label: string): number {
  const value = field(form, name);
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n))
    throw new DomainError('VALIDATION_FAILED', `${label} must be a whole number.`);
  return n;
}

/** A datetime-local field (taken as UTC) or an ISO 8601 timestamp. */
function dateField(form: Form, name: string, label: string): Date {
  const value = field(form, name);
  const d = new Date(/Z$|[+-]\d\d:\d\d$/.test(value) ? value : `${value}Z`);
  if (value === '' || Number.isNaN(d.getTime())) throw new DomainError('VALIDATION_FAILED', `${label} must be a date and time.`);
  return d;
}

const localValue = (d: Date) => d.toISOString().slice(0, 16);

/**
 * The operator's views: owners and their keys (a new key is shown once; revoking one ends its
 * console sessions too), quests (create), and the worker pool. Writes go through the same
 * functions quest-admin uses (@quest/db's admin modules), so the same checks apply.
 */
export function operatorRoutes(app: FastifyInstance, ctx: ConsoleContext): void {
  const { deps } = ctx;

  async function ownersPage(request: Parameters<ConsoleContext['viewer']>[0], issued?: Html): Promise<Html> {
    const viewer = ctx.viewer(request)!;
    const [owners, keys] = await Promise.all([listOwners(deps.sql, { limit: 500 }), listApiKeys(deps.sql, { limit: 1000 })]);
    const keysOf = new Map<string, typeof keys.items>();
    for (const k of keys.items) keysOf.set(k.ownerId, [...(keysOf.get(k.ownerId) ?? []), k]);
    return html`${issued ?? ''}
      <section aria-labelledby="new-owner-h" class="panel">
        <h2 id="new-owner-h">New owner</h2>
        <form method="post" action="/console/operator/owners" class="stack">
          ${csrfField(viewer)}
          <label for="owner-name">Name</label><input id="owner-name" name="name" type="text" required maxlength="200">
          <label for="owner-pass">Pass address</label><input id="owner-pass" name="pass" type="text" required maxlength="42" placeholder="0x…">
          <div><button type="submit">Create owner and key</button></div>
        </form>
      </section>
      <h2>Owners</h2>
      ${
        owners.items.length === 0
          ? html`<p class="muted">No owners yet.</p>`
          : owners.items.map(
              (o) => html`<section class="panel" aria-label="Owner ${o.name}">
          <h3>${o.name} <span class="muted mono">${o.id}</span></h3>
          <p>Pass <code>${o.pass}</code> · ${fmt(o.quests)} quests · ${fmt(o.activeKeys)} active keys</p>
          <div class="table-wrap"><table>
            <thead><tr><th scope="col">Key</th><th scope="col" class="opt">Created</th><th scope="col">State</th><th scope="col">Action</th></tr></thead>
            <tbody>${(keysOf.get(o.id) ?? []).map(
              (k) => html`<tr><td><code>${k.prefix}…</code> <span class="muted mono">${k.id}</span></td>
              <td class="opt">${when(k.createdAt)}</td>
              <td>${k.revokedAt ? html`Revoked ${when(k.revokedAt)}` : 'Active'}</td>
              <td>${
                k.revokedAt
                  ? ''
                  : html`<form method="post" action="/console/operator/keys/${k.id}/revoke" class="inline"
                      data-confirm="Revoke key ${k.prefix}… of ${o.name}? Requests and console sessions with it stop at once.">${csrfField(viewer)}
                      <button type="submit" class="danger" aria-label="Revoke key ${k.prefix} of ${o.name}">Revoke</button></form>`
              }</td></tr>`,
            )}</tbody></table></div>
          <form method="post" action="/console/operator/owners/${o.id}/keys" class="inline">${csrfField(viewer)}
            <button type="submit" class="secondary" aria-label="Issue a new key for ${o.name}">Issue a new key</button></form>
        </section>`,
            )
      }`;
  }

  const keyOnce = (who: string, apiKey: string) =>
    html`<section class="panel" aria-labelledby="key-once-h" role="status">
      <h2 id="key-once-h">New API key for ${who}</h2>
      <p>Shown only now: copy it and hand it to the owner. Only its hash is stored.</p>
      <p class="key-once"><code id="new-api-key">${apiKey}</code></p>
    </section>`;

  app.get('/operator', operator, async (request, reply) =>
    ctx.page(reply, { title: 'Owners and keys', request, body: await ownersPage(request) }),
  );

  app.post('/operator/owners', operator, async (request, reply) => {
    const form = (request.body ?? {}) as Form;
    const { owner, apiKey } = await createOwner(deps.sql, { name: field(form, 'name'), pass: field(form, 'pass') });
    request.log.info({ console: 'owner created', ownerId: owner.id }, 'console: owner created');
    return ctx.page(reply, { title: 'Owners and keys', request, body: await ownersPage(request, keyOnce(owner.name, apiKey)) });
  });

  app.post('/operator/owners/:ownerId/keys', operator, async (request, reply) => {
    const ownerId = String((request.params as { ownerId: string }).ownerId);
    const { apiKey } = await createApiKey(deps.sql, ownerId);
    request.log.info({ console: 'key issued', ownerId }, 'console: API key issued');
    return ctx.page(reply, { title: 'Owners and keys', request, body: await ownersPage(request, keyOnce(ownerId, apiKey)) });
  });

  app.post('/operator/keys/:keyId/revoke', operator, async (request, reply) => {
    const keyId = String((request.params as { keyId: string }).keyId);
    const { key, alreadyRevoked } = await revokeKey(deps.sql, { keyId });
    const ended = await deleteConsoleSessionsOfKey(deps.sql, key.id);
    request.log.info({ console: 'key revoked', keyId: key.id, sessionsEnded: ended }, 'console: API key revoked');
    const note = html`<p class="flash" role="status">Key <code>${key.prefix}…</code> ${alreadyRevoked ? 'was already revoked' : 'revoked'};
      ${fmt(ended)} console session${ended === 1 ? '' : 's'} ended.</p>`;
    return ctx.page(reply, { title: 'Owners and keys', request, body: await ownersPage(request, note) });
  });

  async function questsPage(request: Parameters<ConsoleContext['viewer']>[0], note?: Html): Promise<Html> {
    const viewer = ctx.viewer(request)!;
    const [owners, quests, campaigns] = await Promise.all([
      listOwners(deps.sql, { limit: 500 }),
      listQuests(deps.sql, { limit: 500 }),
      listCampaigns(deps.sql, { limit: 500 }),
    ]);
    const now = new Date();
    const inAMonth = new Date(now.getTime() + 30 * 86_400_000);
    return html`${note ?? ''}
      <section class="panel" aria-labelledby="new-quest-h">
        <h2 id="new-quest-h">New quest</h2>
        <form method="post" action="/console/operator/quests" class="stack">
          ${csrfField(viewer)}
          <label for="quest-owner">Owner</label>
          <select id="quest-owner" name="ownerId" required>${owners.items.map(
            (o) => html`<option value="${o.id}">${o.name} (${o.id})</option>`,
          )}</select>
          <label for="quest-campaign">Campaign (optional)</label>
          <select id="quest-campaign" name="campaignId"><option value="">None</option>${campaigns.items.map(
            (c) => html`<option value="${c.id}">${c.name} (#${c.id})</option>`,
          )}</select>
          <label for="quest-name">Name</label><input id="quest-name" name="name" type="text" required maxlength="200">
          <label for="quest-total">Total points</label><input id="quest-total" name="totalPoints" type="number" min="1" required>
          <label for="quest-expected">Expected points per completion</label>
          <input id="quest-expected" name="expectedPointsPerCompletion" type="number" min="0" value="0" required>
          <label for="quest-start">Start (UTC)</label><input id="quest-start" name="startAt" type="datetime-local" value="${localValue(now)}" required>
          <label for="quest-end">End (UTC)</label><input id="quest-end" name="endAt" type="datetime-local" value="${localValue(inAMonth)}" required>
          <div><button type="submit">Create quest</button></div>
        </form>
      </section>
      <h2>Quests</h2>
      <div class="table-wrap"><table>
        <thead><tr><th scope="col">Quest</th><th scope="col" class="opt">Owner</th><th scope="col" class="opt">Window</th><th scope="col">Budget</th><th scope="col">Action status</th></tr></thead>
        <tbody>${quests.items.map(
          (q) => html`<tr><td>${q.name} <span class="muted">#${q.id}</span></td><td class="opt mono">${q.ownerId}</td>
            <td class="opt">${when(q.startAt)} → ${when(q.endAt)}
              <a href="/console/operator/quests/${q.id}/window" aria-label="Edit the window of quest ${q.name}">Edit</a></td>
            <td>${budgetBar(q.pointsRemaining, q.totalPoints, `Points remaining of quest ${q.name}`)}</td>
            <td>${q.actionStatus}
              <form method="post" action="/console/operator/quests/${q.id}/action-status" class="inline">${csrfField(viewer)}
                <input type="hidden" name="status" value="${q.actionStatus === 'active' ? 'deactivated' : 'active'}">
                <button type="submit" class="link" aria-label="${q.actionStatus === 'active' ? 'Deactivate' : 'Activate'} quest ${q.name}">${q.actionStatus === 'active' ? 'Deactivate' : 'Activate'}</button>
              </form></td></tr>`,
        )}</tbody>
      </table></div>`;
  }

  app.get('/operator/quests', operator, async (request, reply) =>
    ctx.page(reply, { title: 'Quests', request, body: await questsPage(request) }),
  );

  app.post('/operator/quests', operator, async (request, reply) => {
    const form = (request.body ?? {}) as Form;
    const campaign = field(form, 'campaignId');
    const quest = await createQuest(deps.sql, {
      ownerId: field(form, 'ownerId'),
      campaignId: campaign === '' ? null : intField(form, 'campaignId', 'Campaign'),
      name: field(form, 'name'),
      totalPoints: intField(form, 'totalPoints', 'Total points'),
      expectedPointsPerCompletion: intField(form, 'expectedPointsPerCompletion', 'Expected points per completion'),
      startAt: dateField(form, 'startAt', 'Start'),
      endAt: dateField(form, 'endAt', 'End'),
    });
    request.log.info({ console: 'quest created', questId: quest.id }, 'console: quest created');
    const note = html`<p class="flash" role="status">Quest <strong>${quest.name}</strong> created with id ${quest.id} and a budget of ${fmt(quest.totalPoints)} points.</p>`;
    return ctx.page(reply, { title: 'Quests', request, body: await questsPage(request, note) });
  });

  app.post('/operator/quests/:questId/action-status', operator, async (request, reply) => {
    const questId = Number((request.params as { questId: string }).questId);
    const status = field((request.body ?? {}) as Form, 'status') as ActionStatus;
    if (!ACTION_STATUSES.includes(status))
      throw new DomainError('VALIDATION_FAILED', `Status must be one of ${ACTION_STATUSES.join(', ')}.`);
    const quest = await setQuestActionStatus(deps.sql, questId, status);
    request.log.info({ console: 'quest action status', questId: quest.id, status }, 'console: quest action status set');
    const note = html`<p class="flash" role="status">Quest <strong>${quest.name}</strong> is now ${quest.actionStatus}.</p>`;
    return ctx.page(reply, { title: 'Quests', request, body: await questsPage(request, note) });
  });

  app.get('/operator/quests/:questId/window', operator, async (request, reply) => {
    const viewer = ctx.viewer(request)!;
    const questId = Number((request.params as { questId: string }).questId);
    const quest =
      Number.isSafeInteger(questId) && questId > 0 && questId < 2 ** 31 ? await getOwnerQuest(deps.sql, questId) : undefined;
    if (!quest) throw new DomainError('QUEST_NOT_FOUND');
    const body = html`<p>Quest <strong>${quest.name}</strong> (#${quest.id}). Credits are accepted from the start (inclusive) to the
        end (exclusive); the next decision follows the new window.</p>
      <form method="post" action="/console/operator/quests/${quest.id}/window" class="stack">
        ${csrfField(viewer)}
        <label for="window-start">Start (UTC)</label>
        <input id="window-start" name="startAt" type="datetime-local" value="${localValue(quest.startAt)}" required>
        <label for="window-end">End (UTC)</label>
        <input id="window-end" name="endAt" type="datetime-local" value="${localValue(quest.endAt)}" required>
        <div><button type="submit">Save window</button> <a href="/console/operator/quests" class="button secondary">Cancel</a></div>
      </form>`;
    return ctx.page(reply, { title: 'Edit a quest window', request, body });
  });

  app.post('/operator/quests/:questId/window', operator, async (request, reply) => {
    const questId = Number((request.params as { questId: string }).questId);
    const form = (request.body ?? {}) as Form;
    const quest = await setQuestWindow(deps.sql, questId, dateField(form, 'startAt', 'Start'), dateField(form, 'endAt', 'End'));
    request.log.info({ console: 'quest window', questId: quest.id }, 'console: quest window set');
    const note = html`<p class="flash" role="status">Quest <strong>${quest.name}</strong> now runs ${when(quest.startAt)} → ${when(quest.endAt)}.</p>`;
    return ctx.page(reply, { title: 'Quests', request, body: await questsPage(request, note) });
  });

  async function flagsPage(request: Parameters<ConsoleContext['viewer']>[0], note?: Html): Promise<Html> {
    const viewer = ctx.viewer(request)!;
    const flags = await getFeatureFlags(deps.sql);
    return html`${note ?? ''}<p>Switched-off features answer 400 on their routes within seconds, on every API process.</p>
      <div class="table-wrap"><table><thead><tr><th scope="col">Feature</th><th scope="col">State</th><th scope="col">Change</th></tr></thead>
      <tbody>${FEATURES.map(
        (f) => html`<tr><td>${f}</td><td>${flags[f] ? 'on' : 'off'}</td><td>
          <form method="post" action="/console/operator/flags" class="inline">${csrfField(viewer)}
            <input type="hidden" name="feature" value="${f}"><input type="hidden" name="enabled" value="${flags[f] ? 'false' : 'true'}">
            <button type="submit" class="${flags[f] ? 'danger' : ''}">Turn ${f} ${flags[f] ? 'off' : 'on'}</button>
          </form></td></tr>`,
      )}</tbody></table></div>`;
  }

  app.get('/operator/flags', operator, async (request, reply) =>
    ctx.page(reply, { title: 'Feature flags', request, body: await flagsPage(request) }),
  );

  app.post('/operator/flags', operator, async (request, reply) => {
    const form = (request.body ?? {}) as Form;
    const feature = field(form, 'feature') as Feature;
    if (!FEATURES.includes(feature)) throw new DomainError('VALIDATION_FAILED', `Feature must be one of ${FEATURES.join(', ')}.`);
    const enabled = field(form, 'enabled') === 'true';
    await setFeatureFlags(deps.sql, { [feature]: enabled });
    request.log.info({ console: 'feature flag', feature, enabled }, 'console: feature flag set');
    const note = html`<p class="flash" role="status">${feature} turned ${enabled ? 'on' : 'off'}.</p>`;
    return ctx.page(reply, { title: 'Feature flags', request, body: await flagsPage(request, note) });
  });

  app.get('/operator/audit', operator, async (request, reply) => {
    const run = (request.query as { run?: string }).run === '1';
    let result: Html = html``;
    if (run) {
      const report = await audit(deps.sql, { limit: 20 });
      const c = report.checked;
      const rows = [
        ...report.quests.map(
          (q) => html`<li>Quest ${q.questId}: ${q.problems.join('; ')} (discrepancy ${fmt(q.discrepancy)})</li>`,
        ),
        ...report.accounts.map((a) => html`<li>Account <code>${a.pass}</code>: ${a.problems.join('; ')}</li>`),
        ...report.payouts.map((p) => html`<li>Payout <code>${p.payoutId}</code>: ${p.problems.join('; ')}</li>`),
      ];
      result = html`<section class="panel" role="status" aria-labelledby="audit-result-h">
        <h2 id="audit-result-h">${report.ok ? 'The ledger is consistent' : 'The ledger has violations'}</h2>
        <p>Checked ${fmt(c.quests)} quests, ${fmt(c.accounts)} accounts, ${fmt(c.payouts)} payouts (${fmt(c.pointsPaidOut)} points)
          and ${fmt(c.reversals)} reversals (${fmt(c.pointsReversed)} points).</p>
        ${report.ok ? '' : html`<p class="error">Violations: ${fmt(report.violations.quests)} quests, ${fmt(report.violations.accounts)} accounts, ${fmt(report.violations.payouts)} payouts.</p><ul>${rows}</ul>`}
      </section>`;
    }
    const body = html`<p>The audit checks every quest's budget against its payouts and reversals, every account's balance,
        and that no payout is reversed beyond its amount (as <code>quest-admin audit</code> does). It reads the whole ledger.</p>
      <form method="get" action="/console/operator/audit"><input type="hidden" name="run" value="1">
        <button type="submit">Run the audit</button></form>${result}`;
    return ctx.page(reply, { title: 'Audit', request, body });
  });

  async function campaignsPage(request: Parameters<ConsoleContext['viewer']>[0], note?: Html): Promise<Html> {
    const viewer = ctx.viewer(request)!;
    const campaigns = await listCampaigns(deps.sql, { limit: 500 });
    const now = new Date();
    return html`${note ?? ''}
      <section class="panel" aria-labelledby="new-campaign-h">
        <h2 id="new-campaign-h">New campaign</h2>
        <form method="post" action="/console/operator/campaigns" class="stack">
          ${csrfField(viewer)}
          <label for="campaign-name">Name</label><input id="campaign-name" name="name" type="text" required maxlength="200">
          <label for="campaign-description">Description (optional)</label>
          <input id="campaign-description" name="description" type="text" maxlength="2000">
          <label for="campaign-start">Start (UTC)</label><input id="campaign-start" name="startAt" type="datetime-local" value="${localValue(now)}" required>
          <label for="campaign-end">End (UTC)</label>
          <input id="campaign-end" name="endAt" type="datetime-local" value="${localValue(new Date(now.getTime() + 30 * 86_400_000))}" required>
          <div><button type="submit">Create campaign</button></div>
        </form>
      </section>
      <h2>Campaigns</h2>
      ${
        campaigns.items.length === 0
          ? html`<p class="muted">No campaigns yet.</p>`
          : html`<div class="table-wrap"><table>
        <thead><tr><th scope="col">Campaign</th><th scope="col" class="opt">Window</th><th scope="col" class="num">Quests</th><th scope="col">Active</th></tr></thead>
        <tbody>${campaigns.items.map(
          (
            c,
          ) => html`<tr><td>${c.name} <span class="muted">#${c.id}</span></td><td class="opt">${when(c.startAt)} → ${when(c.endAt)}</td>
            <td class="num">${fmt(c.quests)}</td><td>${c.isActive ? 'yes' : 'no'}</td></tr>`,
        )}</tbody></table></div>`
      }`;
  }

  app.get('/operator/campaigns', operator, async (request, reply) =>
    ctx.page(reply, { title: 'Campaigns', request, body: await campaignsPage(request) }),
  );

  app.post('/operator/campaigns', operator, async (request, reply) => {
    const form = (request.body ?? {}) as Form;
    const campaign = await createCampaign(deps.sql, {
      name: field(form, 'name'),
      description: field(form, 'description'),
      startAt: dateField(form, 'startAt', 'Start'),
      endAt: dateField(form, 'endAt', 'End'),
    });
    request.log.info({ console: 'campaign created', campaignId: campaign.id }, 'console: campaign created');
    const note = html`<p class="flash" role="status">Campaign <strong>${campaign.name}</strong> created with id ${campaign.id}.</p>`;
    return ctx.page(reply, { title: 'Campaigns', request, body: await campaignsPage(request, note) });
  });

  app.get('/operator/accounts', operator, async (request, reply) => {
    const body = html`<p>Create the accounts that credits go to from a CSV file of pass addresses: its first line is the
        header, naming a <code>pass</code> (or <code>address</code>) column; other columns are ignored. Existing accounts are
        skipped, so a file can be imported again.</p>
      <form id="import" method="post" action="/console/operator/accounts/import" class="stack">
        <label for="accounts-file">File of addresses</label>
        <input id="accounts-file" name="file" type="file" accept=".csv,.txt,text/csv,text/plain" required>
        <div><button type="submit">Import accounts</button></div>
        <progress id="import-progress" hidden max="1" value="0" aria-label="Upload progress"></progress>
        <p id="import-message" aria-live="polite"></p>
      </form>`;
    return ctx.page(reply, { title: 'Account import', request, body });
  });

  app.post('/operator/accounts/import', operator, async (request) => {
    if (typeof request.body !== 'string') throw new DomainError('UNSUPPORTED_MEDIA_TYPE', 'Send the file as text/csv.');
    const rows = await parseAccountCsv(request.body);
    const result = await importAccounts(deps.sql, rows, { maxInvalidRows: 20 });
    request.log.info(
      { console: 'accounts imported', created: result.created, invalid: result.invalid },
      'console: accounts imported',
    );
    return result;
  });
}
