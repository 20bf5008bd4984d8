import { STATUS_BY_CODE } from '@quest/domain';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { handleError, mapError } from '../errors.ts';
import { type ConsoleContext, consolePath } from './context.ts';
import { type Html, html } from './html.ts';
import { idOf } from './ids.ts';
import { wantsJson } from './hooks.ts';

/** Where to go from a refused request: back to what its path names (unless that is what was not found), and home. */
function wayBack(request: FastifyRequest, status: number): Html[] {
  const links: [string, string][] = [];
  const questId = idOf(request, 'questId');
  const payoutId = idOf(request, 'payoutId');
  const endpointId = idOf(request, 'endpointId');
  if (status !== 404) {
    if (request.url.startsWith(consolePath('operator'))) {
      if (questId) links.push(['Back to the quests', consolePath('operator', 'quests')]);
    } else {
      if (questId && payoutId) links.push(['Back to the payout', consolePath('quests', questId, 'payouts', payoutId, 'reverse')]);
      if (questId) links.push(['Back to the quest', consolePath('quests', questId)]);
      if (endpointId) links.push(['Back to the endpoint', consolePath('webhooks', endpointId)]);
    }
  }
  links.push(['Console home', consolePath('')]);
  return links.map(([label, href]) => html`<li><a href="${href}">${label}</a></li>`);
}

/**
 * The console's errors: JSON to its script (handleError, as the API answers), an HTML page to a
 * browser, saying what went wrong in words, with the error's code and request id for a report,
 * and the way back.
 */
export function consoleErrorHandler(ctx: ConsoleContext) {
  return (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    if (wantsJson(request)) return handleError(error, request, reply);
    const mapped = mapError(error);
    const status = STATUS_BY_CODE[mapped.code];
    if (status >= 500) request.log.error({ err: error, code: mapped.code }, 'console request failed');
    if (reply.getHeader('retry-after') === undefined && status === 503) reply.header('retry-after', '1');
    const body = html`<p role="alert" class="error">${mapped.message}</p>
      <ul class="links">${wayBack(request, status)}</ul>
      <p class="muted">Error <code>${mapped.code}</code> · request id <code>${request.id}</code></p>`;
    return ctx.page(reply, { title: status === 429 ? 'Too many attempts' : 'That did not work', request, body, status });
  };
}
