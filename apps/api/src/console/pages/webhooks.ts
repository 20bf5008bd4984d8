import { DomainError } from '@quest/domain';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { bodyOf } from '../../commands/answer.ts';
import { sessionCaller } from '../caller.ts';
import { type ConsoleContext, consolePath, OWNER } from '../context.ts';
import { field, formOf } from '../forms.ts';
import { counted, csrfField, fmt, type Html, html, type Viewer, when } from '../html.ts';
import { pathId } from '../ids.ts';

const iso = (s: string | null) => (s ? when(new Date(s)) : '—');

type Endpoint = Awaited<ReturnType<ConsoleContext['deps']['webhooks']['list']>>[number];
type Delivery = Awaited<ReturnType<ConsoleContext['deps']['webhooks']['deliveries']>>[number];

const endpointTable = (endpoints: readonly Endpoint[]) =>
  endpoints.length === 0
    ? html`<p class="muted">No webhook endpoints yet.</p>`
    : html`<div class="table-wrap"><table>
      <thead><tr><th scope="col">Endpoint</th><th scope="col">Status</th><th scope="col" class="opt">Events</th><th scope="col" class="opt">Created</th></tr></thead>
      <tbody>${endpoints.map(
        (
          e,
        ) => html`<tr><td><a href="${consolePath('webhooks', e.id)}">${e.url}</a><br><span class="muted mono">${e.id}</span></td>
          <td class="${e.status === 'failing' ? 'status-failed' : ''}">${e.status}${e.failing_since ? html` since ${iso(e.failing_since)}` : ''}</td>
          <td class="opt">${e.events ? e.events.join(', ') : 'all'}</td><td class="opt">${iso(e.created_at)}</td></tr>`,
      )}</tbody></table></div>`;

const newEndpointForm = (viewer: Viewer) => html`<section class="panel" aria-labelledby="new-endpoint-h">
  <h2 id="new-endpoint-h">Add an endpoint</h2>
  <form method="post" action="${consolePath('webhooks')}" class="stack">
    ${csrfField(viewer)}
    <label for="endpoint-url">URL (https://…)</label><input id="endpoint-url" name="url" type="url" required maxlength="2000">
    <label for="endpoint-description">Description (optional)</label>
    <input id="endpoint-description" name="description" type="text" maxlength="500">
    <div><button type="submit">Add endpoint</button></div>
  </form>
</section>`;

/** Why no endpoint can be added: the service has no key to encrypt their signing secrets with. */
const NOT_CONFIGURED = html`<section class="panel" role="note" aria-labelledby="webhooks-off-h">
  <h2 id="webhooks-off-h">Webhooks are not configured</h2>
  <p>Endpoints cannot be added yet: this service has no <code>WEBHOOK_SECRET_KEY</code>, the key that encrypts each
  endpoint's signing secret (the API and the worker both need it). Ask the operator to set it; on your own machine,
  run <code>npx quest-admin webhooks local</code> and restart <code>npm start</code>.</p></section>`;

async function listPage(ctx: ConsoleContext, request: FastifyRequest, note?: Html): Promise<Html> {
  const endpoints = await ctx.deps.webhooks.list(ctx.owner(request).ownerId);
  const add = ctx.deps.config.WEBHOOK_SECRET_KEY === undefined ? NOT_CONFIGURED : newEndpointForm(ctx.viewer(request)!);
  return html`${note ?? ''}${endpointTable(endpoints)}${add}`;
}

const deliveryTable = (deliveries: readonly Delivery[]) =>
  deliveries.length === 0
    ? html`<p class="muted">No deliveries yet.</p>`
    : html`<div class="table-wrap"><table>
      <thead><tr><th scope="col">Event</th><th scope="col">Status</th><th scope="col" class="num">Attempts</th><th scope="col" class="opt">Last attempt</th><th scope="col" class="opt">Answer</th></tr></thead>
      <tbody>${deliveries.map(
        (d) => html`<tr><td>${d.event_type}<br><span class="muted mono">${d.event_id}</span></td>
          <td class="status-${d.status === 'delivered' ? 'completed' : d.status === 'failed' ? 'failed' : 'pending'}">${d.status}</td>
          <td class="num">${fmt(d.attempts)}</td><td class="opt">${iso(d.last_attempt_at)}</td>
          <td class="opt">${d.response_status ?? ''} ${d.error ?? ''}${d.latency_ms !== null ? html` <span class="muted">(${fmt(d.latency_ms)} ms)</span>` : ''}</td></tr>`,
      )}</tbody></table></div>`;

const endpointForms = (viewer: Viewer, e: Endpoint) => html`<div class="grid">
  <form method="post" action="${consolePath('webhooks', e.id, 'replay')}" class="stack panel">
    ${csrfField(viewer)}
    <label for="replay-since">Deliver again every event since (UTC)</label>
    <input id="replay-since" name="since" type="datetime-local" value="${new Date(Date.now() - 3_600_000).toISOString().slice(0, 16)}" required>
    <div><button type="submit" class="secondary">Replay</button></div>
  </form>
  <form method="post" action="${consolePath('webhooks', e.id, 'delete')}" class="stack panel"
    data-confirm="Delete the endpoint ${e.url}? Deliveries to it stop.">
    ${csrfField(viewer)}
    <p>Deleting stops every delivery to this URL.</p>
    <div><button type="submit" class="danger">Delete endpoint</button></div>
  </form>
</div>`;

/** An endpoint: its URL and state, replay and delete, and its delivery log. */
async function endpointPage(ctx: ConsoleContext, request: FastifyRequest, note?: Html): Promise<Html> {
  const { ownerId } = ctx.owner(request);
  const id = pathId(request, 'endpointId');
  const endpoint = (await ctx.deps.webhooks.list(ownerId)).find((e) => e.id === id);
  if (!endpoint) throw new DomainError('WEBHOOK_ENDPOINT_NOT_FOUND');
  const deliveries = await ctx.deps.webhooks.deliveries(ownerId, id, { limit: 100 });
  return html`${note ?? ''}
    <p>Delivers to <code id="endpoint-url">${endpoint.url}</code> <span class="muted mono">${endpoint.id}</span></p>
    <p>Status: <strong>${endpoint.status}</strong>${endpoint.failing_since ? html`, failing since ${iso(endpoint.failing_since)}` : ''}.
      Events: ${endpoint.events ? endpoint.events.join(', ') : 'all'}. ${endpoint.description}</p>
    ${endpointForms(ctx.viewer(request)!, endpoint)}
    <h2>Delivery log</h2>
    ${deliveryTable(deliveries)}`;
}

/**
 * The owner's webhook endpoints, through the command boundary like the /webhook-endpoints routes:
 * add one (its signing secret shown once), see each one's state and delivery log, replay the
 * events since a time, delete one.
 */
export function webhookRoutes(app: FastifyInstance, ctx: ConsoleContext): void {
  const { commands } = ctx.deps;
  const list = async (request: FastifyRequest, reply: FastifyReply, note?: Html) =>
    ctx.page(reply, { title: 'Webhooks', request, body: await listPage(ctx, request, note) });
  const endpoint = async (request: FastifyRequest, reply: FastifyReply, note?: Html) =>
    ctx.page(reply, { title: 'Webhook endpoint', request, body: await endpointPage(ctx, request, note) });

  app.get('/webhooks', OWNER, async (request, reply) => list(request, reply));

  app.post('/webhooks', OWNER, async (request, reply) => {
    const form = formOf(request);
    const input = { url: field(form, 'url'), description: field(form, 'description') || undefined };
    const { endpoint: created } = bodyOf(await commands.createEndpoint(sessionCaller(ctx, request, reply), input)).body;
    const note = html`<section class="panel" role="status" aria-labelledby="secret-h">
      <h2 id="secret-h">Endpoint added</h2>
      <p>Its signing secret, shown only now (verify each delivery's signature with it: see the events docs):</p>
      <p class="key-once"><code id="new-webhook-secret">${created.secret ?? ''}</code></p></section>`;
    return list(request, reply, note);
  });

  app.get('/webhooks/:endpointId', OWNER, async (request, reply) => endpoint(request, reply));

  app.post('/webhooks/:endpointId/replay', OWNER, async (request, reply) => {
    const id = pathId(request, 'endpointId');
    const value = field(formOf(request), 'since');
    const since = new Date(/Z$|[+-]\d\d:\d\d$/.test(value) ? value : `${value}Z`);
    if (value === '' || Number.isNaN(since.getTime()))
      throw new DomainError('VALIDATION_FAILED', 'Since must be a date and time.');
    const input = { id, since: since.toISOString() };
    const { deliveries } = bodyOf(await commands.replayEvents(sessionCaller(ctx, request, reply), input)).body;
    return endpoint(
      request,
      reply,
      html`<p class="flash" role="status">${counted(deliveries, 'event')} queued for delivery again.</p>`,
    );
  });

  app.post('/webhooks/:endpointId/delete', OWNER, async (request, reply) => {
    const input = { id: pathId(request, 'endpointId') };
    const { endpoint: deleted } = bodyOf(await commands.deleteEndpoint(sessionCaller(ctx, request, reply), input)).body;
    return list(request, reply, html`<p class="flash" role="status">Endpoint ${deleted.url} deleted.</p>`);
  });
}
