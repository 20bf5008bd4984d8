import { FEATURES, type Feature, getFeatureFlags, setFeatureFlags } from '@quest/db';
import { DomainError } from '@quest/domain';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type ConsoleContext, consolePath, OPERATOR } from '../context.ts';
import { field, formOf } from '../forms.ts';
import { csrfField, type Html, html } from '../html.ts';

async function flagsPage(ctx: ConsoleContext, request: FastifyRequest, note?: Html): Promise<Html> {
  const viewer = ctx.viewer(request)!;
  const flags = await getFeatureFlags(ctx.deps.sql);
  return html`${note ?? ''}<p>Switched-off features answer 400 on their routes within seconds, on every API process.</p>
    <div class="table-wrap"><table><thead><tr><th scope="col">Feature</th><th scope="col">State</th><th scope="col">Change</th></tr></thead>
    <tbody>${FEATURES.map(
      (f) => html`<tr><td>${f}</td><td>${flags[f] ? 'on' : 'off'}</td><td>
        <form method="post" action="${consolePath('operator', 'flags')}" class="inline">${csrfField(viewer)}
          <input type="hidden" name="feature" value="${f}"><input type="hidden" name="enabled" value="${flags[f] ? 'false' : 'true'}">
          <button type="submit" class="${flags[f] ? 'danger' : ''}">Turn ${f} ${flags[f] ? 'off' : 'on'}</button>
        </form></td></tr>`,
    )}</tbody></table></div>`;
}

/** The operator's feature flags: each one's state, switched in the table every API process reads. */
export function operatorFlagRoutes(app: FastifyInstance, ctx: ConsoleContext): void {
  const show = async (request: FastifyRequest, reply: FastifyReply, note?: Html) =>
    ctx.page(reply, { title: 'Feature flags', request, body: await flagsPage(ctx, request, note) });

  app.get('/operator/flags', OPERATOR, async (request, reply) => show(request, reply));

  app.post('/operator/flags', OPERATOR, async (request, reply) => {
    const form = formOf(request);
    const feature = field(form, 'feature') as Feature;
    if (!FEATURES.includes(feature)) throw new DomainError('VALIDATION_FAILED', `Feature must be one of ${FEATURES.join(', ')}.`);
    const enabled = field(form, 'enabled') === 'true';
    await setFeatureFlags(ctx.deps.sql, { [feature]: enabled });
    request.log.info({ console: 'feature flag', feature, enabled }, 'console: feature flag set');
    return show(request, reply, html`<p class="flash" role="status">${feature} turned ${enabled ? 'on' : 'off'}.</p>`);
  });
}
