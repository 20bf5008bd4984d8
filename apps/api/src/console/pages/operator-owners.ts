import { deleteConsoleSessionsOfKey } from '@quest/db';
import { createApiKey, listApiKeys, revokeKey } from '@quest/db/keys';
import { createOwner, listOwners } from '@quest/db/owners';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type ConsoleContext, consolePath, OPERATOR } from '../context.ts';
import { field, formOf } from '../forms.ts';
import { counted, csrfField, type Html, html, type Viewer, when } from '../html.ts';
import { pathId } from '../ids.ts';

type Owner = Awaited<ReturnType<typeof listOwners>>['items'][number];
type Key = Awaited<ReturnType<typeof listApiKeys>>['items'][number];

const newOwnerForm = (viewer: Viewer) => html`<section aria-labelledby="new-owner-h" class="panel">
  <h2 id="new-owner-h">New owner</h2>
  <form method="post" action="${consolePath('operator', 'owners')}" class="stack">
    ${csrfField(viewer)}
    <label for="owner-name">Name</label><input id="owner-name" name="name" type="text" required maxlength="200">
    <label for="owner-pass">Pass address</label><input id="owner-pass" name="pass" type="text" required maxlength="42" placeholder="0x…">
    <div><button type="submit">Create owner and key</button></div>
  </form>
</section>`;

const keyRow = (
  viewer: Viewer,
  o: Owner,
  k: Key,
) => html`<tr><td><code>${k.prefix}…</code> <span class="muted mono">${k.id}</span></td>
  <td class="opt">${when(k.createdAt)}</td>
  <td>${k.revokedAt ? html`Revoked ${when(k.revokedAt)}` : 'Active'}</td>
  <td>${
    k.revokedAt
      ? ''
      : html`<form method="post" action="${consolePath('operator', 'keys', k.id, 'revoke')}" class="inline"
          data-confirm="Revoke key ${k.prefix}… of ${o.name}? Requests and console sessions with it stop at once.">${csrfField(viewer)}
          <button type="submit" class="danger" aria-label="Revoke key ${k.prefix} of ${o.name}">Revoke</button></form>`
  }</td></tr>`;

const ownerPanel = (viewer: Viewer, o: Owner, keys: readonly Key[]) => html`<section class="panel" aria-label="Owner ${o.name}">
  <h3>${o.name} <span class="muted mono">${o.id}</span></h3>
  <p>Pass <code>${o.pass}</code> · ${counted(o.quests, 'quest')} · ${counted(o.activeKeys, 'active key')}</p>
  <div class="table-wrap"><table>
    <thead><tr><th scope="col">Key</th><th scope="col" class="opt">Created</th><th scope="col">State</th><th scope="col">Action</th></tr></thead>
    <tbody>${keys.map((k) => keyRow(viewer, o, k))}</tbody></table></div>
  <form method="post" action="${consolePath('operator', 'owners', o.id, 'keys')}" class="inline">${csrfField(viewer)}
    <button type="submit" class="secondary" aria-label="Issue a new key for ${o.name}">Issue a new key</button></form>
</section>`;

/** The owners and their keys, under `note` (a new key shown once, a revocation's outcome). */
async function ownersPage(ctx: ConsoleContext, request: FastifyRequest, note?: Html): Promise<Html> {
  const viewer = ctx.viewer(request)!;
  const { sql } = ctx.deps;
  const [owners, keys] = await Promise.all([listOwners(sql, { limit: 500 }), listApiKeys(sql, { limit: 1000 })]);
  const keysOf = new Map<string, Key[]>();
  for (const k of keys.items) keysOf.set(k.ownerId, [...(keysOf.get(k.ownerId) ?? []), k]);
  return html`${note ?? ''}${newOwnerForm(viewer)}
    <h2>Owners</h2>
    ${
      owners.items.length === 0
        ? html`<p class="muted">No owners yet.</p>`
        : owners.items.map((o) => ownerPanel(viewer, o, keysOf.get(o.id) ?? []))
    }`;
}

const keyOnce = (who: string, apiKey: string) =>
  html`<section class="panel" aria-labelledby="key-once-h" role="status">
    <h2 id="key-once-h">New API key for ${who}</h2>
    <p>Shown only now: copy it and hand it to the owner. Only its hash is stored.</p>
    <p class="key-once"><code id="new-api-key">${apiKey}</code></p>
  </section>`;

/**
 * The operator's owners and keys: create an owner (with a first key), issue a key (each shown
 * once), revoke a key, which ends its console sessions too. Writes go through @quest/db's admin
 * modules, as quest-admin's do.
 */
export function operatorOwnerRoutes(app: FastifyInstance, ctx: ConsoleContext): void {
  const { sql } = ctx.deps;
  const show = async (request: FastifyRequest, reply: FastifyReply, note?: Html) =>
    ctx.page(reply, { title: 'Owners and keys', request, body: await ownersPage(ctx, request, note) });

  app.get('/operator', OPERATOR, async (request, reply) => show(request, reply));

  app.post('/operator/owners', OPERATOR, async (request, reply) => {
    const form = formOf(request);
    const { owner, apiKey } = await createOwner(sql, { name: field(form, 'name'), pass: field(form, 'pass') });
    request.log.info({ console: 'owner created', ownerId: owner.id }, 'console: owner created');
    return show(request, reply, keyOnce(owner.name, apiKey));
  });

  app.post('/operator/owners/:ownerId/keys', OPERATOR, async (request, reply) => {
    const ownerId = pathId(request, 'ownerId');
    const { apiKey } = await createApiKey(sql, ownerId);
    request.log.info({ console: 'key issued', ownerId }, 'console: API key issued');
    return show(request, reply, keyOnce(ownerId, apiKey));
  });

  app.post('/operator/keys/:keyId/revoke', OPERATOR, async (request, reply) => {
    const { key, alreadyRevoked } = await revokeKey(sql, { keyId: pathId(request, 'keyId') });
    const ended = await deleteConsoleSessionsOfKey(sql, key.id);
    request.log.info({ console: 'key revoked', keyId: key.id, sessionsEnded: ended }, 'console: API key revoked');
    const note = html`<p class="flash" role="status">Key <code>${key.prefix}…</code> ${alreadyRevoked ? 'was already revoked' : 'revoked'};
      ${counted(ended, 'console session')} ended.</p>`;
    return show(request, reply, note);
  });
}
