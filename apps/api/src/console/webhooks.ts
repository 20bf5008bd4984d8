import { DomainError } from '@quest/domain';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { bodyOf } from '../commands/answer.ts';
import { sessionCaller } from './caller.ts';
import { csrfField, fmt, type Html, html, when } from './html.ts';
import type { ConsoleContext } from './context.ts';

const owner = { config: { consoleRole: 'owner' as const } };
const ENDPOINT_ID = /^whe_[A-Za-z0-9_-]{1,100}$/;
const iso = (s: string | null) => (s ? when(new Date(s)) : '—');

function endpointId(request: FastifyRequest): string {
  const id = String((request.params as { id?: string }).id ?? '');
  if (!ENDPOINT_ID.test(id)) throw new DomainError('WEBHOOK_ENDPOINT_NOT_FOUND');
  return id;
}

/** Why no endpoint can be added: the service has no key to encrypt their signing secrets with. */
const NOT_CONFIGURED = html`<section class="panel" role="note" aria-labelledby="webhooks-off-h">
  <h2 id="webhooks-off-h">Webhooks are not configured</h2>
  <p>Endpoints cannot be added yet: this service has no <code>WEBHOOK_SECRET_KEY</code>, the key that encrypts each
  endpoint's signing secret (the API and the worker both need it). Ask the operator to set it; on your own machine,
  run <code>npx quest-admin webhooks local</code> and restart <code>npm start</code>.</p></section>`;

/**
 * The owner's webhook endpoints, through the same service as the /webhook-endpoints routes:
 * add one (its signing secret shown once), see each one's state and delivery log, replay the
 * events since a time, delete one.
 */
export function webhookRoutes(app: FastifyInstance, ctx: ConsoleContext): void {
  const { deps } = ctx;

  async function listPage(request: FastifyRequest, note?: Html): Promise<Html> {
    const session = ctx.owner(request);
    const viewer = ctx.viewer(request)!;
    const endpoints = await deps.webhooks.list(session.ownerId);
    return html`${note ?? ''}
      ${
        endpoints.length === 0
          ? html`<p class="muted">No webhook endpoints yet.</p>`
          : html`<div class="table-wrap"><table>
        <thead><tr><th scope="col">Endpoint</th><th scope="col">Status</th><th scope="col" class="opt">Events</th><th scope="col" class="opt">Created</th></tr></thead>
        <tbody>${endpoints.map(
          (e) => html`<tr><td><a href="/console/webhooks/${e.id}">${e.url}</a><br><span class="muted mono">${e.id}</span></td>
            <td class="${e.status === 'failing' ? 'status-failed' : ''}">${e.status}${e.failing_since ? html` since ${iso(e.failing_since)}` : ''}</td>
            <td class="opt">${e.events ? e.events.join(', ') : 'all'}</td><td class="opt">${iso(e.created_at)}</td></tr>`,
        )}</tbody></table></div>`
      }
      ${
        deps.config.WEBHOOK_SECRET_KEY === undefined
          ? NOT_CONFIGURED
          : html`<section class="panel" aria-labelledby="new-endpoint-h">
        <h2 id="new-endpoint-h">Add an endpoint</h2>
        <form method="post" action="/console/webhooks" class="stack">
          ${csrfField(viewer)}
          <label for="endpoint-url">URL (https://…)</label><input id="endpoint-url" name="url" type="url" required maxlength="2000">
          <label for="endpoint-description">Description (optional)</label>
          <input id="endpoint-description" name="description" type="text" maxlength="500">
          <div><button type="submit">Add endpoint</button></div>
        </form>
      </section>`
      }`;
  }

  app.get('/webhooks', owner, async (request, reply) =>
    ctx.page(reply, { title: 'Webhooks', request, body: await listPage(request) }),
  );

  app.post('/webhooks', owner, async (request, reply) => {
    const form = (request.body ?? {}) as { url?: string; description?: string };
    const description = typeof form.description === 'string' && form.description.trim() ? form.description.trim() : undefined;
    const input = { url: String(form.url ?? '').trim(), description };
    const { endpoint: created } = bodyOf(await deps.commands.createEndpoint(sessionCaller(ctx, request, reply), input)).body;
    const note = html`<section class="panel" role="status" aria-labelledby="secret-h">
      <h2 id="secret-h">Endpoint added</h2>
      <p>Its signing secret, shown only now (verify each delivery's signature with it: see the events docs):</p>
      <p class="key-once"><code id="new-webhook-secret">${created.secret ?? ''}</code></p></section>`;
    return ctx.page(reply, { title: 'Webhooks', request, body: await listPage(request, note) });
  });

  async function endpointPage(request: FastifyRequest, note?: Html): Promise<Html> {
    const session = ctx.owner(request);
    const viewer = ctx.viewer(request)!;
    const id = endpointId(request);
    const endpoint = (await deps.webhooks.list(session.ownerId)).find((e) => e.id === id);
    if (!endpoint) throw new DomainError('WEBHOOK_ENDPOINT_NOT_FOUND');
    const deliveries = await deps.webhooks.deliveries(session.ownerId, id, { limit: 100 });
    const hourAgo = new Date(Date.now() - 3_600_000).toISOString().slice(0, 16);
    return html`${note ?? ''}
      <p>Status: <strong>${endpoint.status}</strong>${endpoint.failing_since ? html`, failing since ${iso(endpoint.failing_since)}` : ''}.
        Events: ${endpoint.events ? endpoint.events.join(', ') : 'all'}. ${endpoint.description}</p>
      <div class="grid">
        <form method="post" action="/console/webhooks/${id}/replay" class="stack panel">
          ${csrfField(viewer)}
          <label for="replay-since">Deliver again every event since (UTC)</label>
          <input id="replay-since" name="since" type="datetime-local" value="${hourAgo}" required>
          <div><button type="submit" class="secondary">Replay</button></div>
        </form>
        <form method="post" action="/console/webhooks/${id}/delete" class="stack panel"
          data-confirm="Delete the endpoint ${endpoint.url}? Deliveries to it stop.">
          ${csrfField(viewer)}
          <p>Deleting stops every delivery to this URL.</p>
          <div><button type="submit" class="danger">Delete endpoint</button></div>
        </form>
      </div>
      <h2>Delivery log</h2>
      ${
        deliveries.length === 0
          ? html`<p class="muted">No deliveries yet.</p>`
          : html`<div class="table-wrap"><table>
        <thead><tr><th scope="col">Event</th><th scope="col">Status</th><th scope="col" class="num">Attempts</th><th scope="col" class="opt">Last attempt</th><th scope="col" class="opt">Answer</th></tr></thead>
        <tbody>${deliveries.map(
          (d) => html`<tr><td>${d.event_type}<br><span class="muted mono">${d.event_id}</span></td>
            <td class="status-${d.status === 'delivered' ? 'completed' : d.status === 'failed' ? 'failed' : 'pending'}">${d.status}</td>
            <td class="num">${fmt(d.attempts)}</td><td class="opt">${iso(d.last_attempt_at)}</td>
            <td class="opt">${d.response_status ?? ''} ${d.error ?? ''}${d.latency_ms !== null ? html` <span class="muted">(${fmt(d.latency_ms)} ms)</span>` : ''}</td></tr>`,
        )}</tbody></table></div>`
      }`;
  }

  app.get('/webhooks/:id', owner, async (request, reply) =>
    ctx.page(reply, { title: 'Webhook endpoint', request, body: await endpointPage(request) }),
  );

  app.post('/webhooks/:id/replay', owner, async (request, reply) => {
    const id = endpointId(request);
    const value = String((request.body as { since?: string } | undefined)?.since ?? '').trim();
    const since = new Date(/Z$|[+-]\d\d:\d\d$/.test(value) ? value : `${value}Z`);
    if (value === '' || Number.isNaN(since.getTime()))
      throw new DomainError('VALIDATION_FAILED', 'Since must be a date and time.');
    const input = { id, since: since.toISOString() };
    const { deliveries } = bodyOf(await deps.commands.replayEvents(sessionCaller(ctx, request, reply), input)).body;
    const note = html`<p class="flash" role="status">${fmt(deliveries)} event${deliveries === 1 ? '' : 's'} queued for delivery again.</p>`;
    return ctx.page(reply, { title: 'Webhook endpoint', request, body: await endpointPage(request, note) });
  });

  app.post('/webhooks/:id/delete', owner, async (request, reply) => {
    const input = { id: endpointId(request) };
    const { endpoint: deleted } = bodyOf(await deps.commands.deleteEndpoint(sessionCaller(ctx, request, reply), input)).body;
    const note = html`<p class="flash" role="status">Endpoint ${deleted.url} deleted.</p>`;
    return ctx.page(reply, { title: 'Webhooks', request, body: await listPage(request, note) });
  });
}
