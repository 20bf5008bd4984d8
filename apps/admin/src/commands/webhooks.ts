import { getEndpoint, listDeliveries, listEndpoints, replayEvents } from '@quest/db/webhooks';
import { setUpLocalWebhooks } from '@quest/config';
import { AdminError } from '@quest/db/admin-errors';
import type { CommandOutput, Context } from '../context.ts';
import { renderTable } from '../format.ts';

/** Webhook endpoints for operators: every owner's, their delivery logs, and replays (docs/events.md). */

export async function webhookList(ctx: Context, opts: { owner?: string }): Promise<CommandOutput> {
  const rows = await listEndpoints(await ctx.db(), opts.owner);
  const endpoints = rows.map((e) => ({
    id: e.id,
    owner: e.ownerId,
    url: e.url,
    events: e.eventTypes,
    status: e.status,
    failingSince: e.failingSince?.toISOString() ?? null,
    createdAt: e.createdAt.toISOString(),
  }));
  return {
    json: { endpoints },
    text: endpoints.length
      ? renderTable(
          ['ID', 'OWNER', 'URL', 'EVENTS', 'STATUS', 'CREATED'],
          endpoints.map((e) => [e.id, e.owner, e.url, e.events?.join(',') ?? 'all', e.status, e.createdAt]),
        )
      : 'No webhook endpoints.',
  };
}

async function endpointOrFail(ctx: Context, id: string) {
  const endpoint = await getEndpoint(await ctx.db(), id);
  if (!endpoint) throw new AdminError('WEBHOOK_ENDPOINT_NOT_FOUND', `No webhook endpoint ${id}.`);
  return endpoint;
}

export async function webhookDeliveries(
  ctx: Context,
  opts: { endpoint: string; status?: 'pending' | 'delivered' | 'failed'; limit: number },
): Promise<CommandOutput> {
  await endpointOrFail(ctx, opts.endpoint);
  const rows = await listDeliveries(await ctx.db(), { endpointId: opts.endpoint, status: opts.status, limit: opts.limit });
  const deliveries = rows.map((d) => ({
    id: d.id,
    event: d.eventId,
    type: d.eventType,
    status: d.status,
    attempts: d.attempts,
    nextAttemptAt: d.status === 'pending' ? d.nextAttemptAt.toISOString() : null,
    responseStatus: d.responseStatus,
    latencyMs: d.latencyMs,
    error: d.error,
    responseBody: d.responseBody,
  }));
  return {
    json: { deliveries },
    text: deliveries.length
      ? renderTable(
          ['ID', 'EVENT', 'TYPE', 'STATUS', 'ATTEMPTS', 'NEXT', 'HTTP', 'MS', 'ERROR'],
          deliveries.map((d) => [
            d.id,
            d.event,
            d.type,
            d.status,
            d.attempts,
            d.nextAttemptAt,
            d.responseStatus,
            d.latencyMs,
            d.error,
          ]),
        )
      : 'No deliveries.',
  };
}

export async function webhookReplay(ctx: Context, opts: { endpoint: string; since: Date }): Promise<CommandOutput> {
  await endpointOrFail(ctx, opts.endpoint);
  const deliveries = await replayEvents(await ctx.db(), opts.endpoint, opts.since);
  return {
    json: { endpoint: opts.endpoint, since: opts.since.toISOString(), deliveries },
    text: `${deliveries} event${deliveries === 1 ? '' : 's'} since ${opts.since.toISOString()} queued for delivery to ${opts.endpoint}.`,
  };
}

/**
 * Webhooks on this machine in one step: a fresh WEBHOOK_SECRET_KEY and WEBHOOK_ALLOW_PRIVATE_URLS=true
 * appended to the .env the API and the worker read; a setting already given is kept.
 */
export function webhookLocal(ctx: Context): CommandOutput {
  const done = setUpLocalWebhooks(ctx.origin.env, ctx.origin.cwd);
  const kept = done.kept.length ? `Already set, kept: ${done.kept.join(', ')}.\n` : '';
  const text = done.added.length
    ? `Added to ${done.file}: ${done.added.join(', ')}.\n${kept}Restart the API and the worker (stop npm start, start it again) to use them: endpoints may then be http://127.0.0.1:… URLs.`
    : `${kept}Nothing to add to ${done.file}: webhooks are set up (restart the API and the worker if they started before).`;
  return { json: { file: done.file, added: done.added, kept: done.kept }, text };
}
