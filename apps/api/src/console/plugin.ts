import cookie from '@fastify/cookie';
import formbody from '@fastify/formbody';
import { DomainError } from '@quest/domain';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AuthFailureLimit } from '../rate-limits.ts';
import type { RouteDeps } from '../types.ts';
import { assetRoutes } from './assets.ts';
import { CONSOLE_PATH, type ConsoleContext } from './context.ts';
import { consoleErrorHandler } from './error-page.ts';
import { consoleHooks } from './hooks.ts';
import { layout } from './html.ts';
import { batchRoutes } from './pages/batches.ts';
import { operatorAccountRoutes } from './pages/operator-accounts.ts';
import { operatorAuditRoutes } from './pages/operator-audit.ts';
import { operatorCampaignRoutes } from './pages/operator-campaigns.ts';
import { operatorFlagRoutes } from './pages/operator-flags.ts';
import { operatorOwnerRoutes } from './pages/operator-owners.ts';
import { operatorPoolRoutes } from './pages/operator-pool.ts';
import { operatorQuestRoutes } from './pages/operator-quests.ts';
import { ownerQuestRoutes } from './pages/owner-quests.ts';
import { reversalRoutes } from './pages/reversal.ts';
import { signInRoutes } from './pages/sign-in.ts';
import { webhookRoutes } from './pages/webhooks.ts';
import { type ConsoleSession, ConsoleSessions } from './sessions.ts';

export { CONSOLE_PATH };

/** What every page gets: the deps, the request's session and viewer, and the page layout. */
function consoleContext(deps: RouteDeps, sessions: ConsoleSessions, bySession: WeakMap<FastifyRequest, ConsoleSession>) {
  const ctx: ConsoleContext = {
    deps,
    sessions,
    session: (request) => bySession.get(request),
    owner(request) {
      const s = bySession.get(request);
      if (s?.kind !== 'owner') throw new DomainError('INVALID_API_KEY', 'Sign in to the console first.');
      return s;
    },
    viewer(request) {
      const s = bySession.get(request);
      if (!s) return undefined;
      return { kind: s.kind, name: s.kind === 'owner' ? s.ownerName : 'Operator', csrfToken: s.csrfToken };
    },
    page(reply, { title, request, body, flash, status }) {
      return reply
        .code(status ?? 200)
        .type('text/html; charset=utf-8')
        .send(layout({ title, viewer: ctx.viewer(request), body, flash }));
    },
  };
  return ctx;
}

/**
 * The browser console at /console: server-rendered pages for quest owners (signed in with their
 * `sk_` key) and operators (ADMIN_TOKEN), on a session cookie. Registered in a context of its own,
 * so its cookie and form parsing, its hooks and its HTML error pages touch no API route: the spec's
 * routes keep taking only `x-api-key` and answering JSON.
 */
export async function consolePlugin(app: FastifyInstance, opts: { deps: RouteDeps; authFailures: AuthFailureLimit }) {
  const { deps, authFailures } = opts;
  const bySession = new WeakMap<FastifyRequest, ConsoleSession>();
  const ctx = consoleContext(deps, new ConsoleSessions(deps.sql, deps.config.ADMIN_TOKEN), bySession);

  // Pages, not API: none of the console's routes is in the OpenAPI document.
  app.addHook('onRoute', (route) => {
    route.schema = { ...route.schema, hide: true };
  });
  await app.register(cookie);
  await app.register(formbody, { bodyLimit: 64 * 1024 });
  app.addContentTypeParser(
    'text/csv',
    { parseAs: 'string', bodyLimit: deps.config.BATCH_BODY_LIMIT_BYTES },
    (_request, body, done) => done(null, body),
  );
  app.setErrorHandler(consoleErrorHandler(ctx));
  consoleHooks(app, ctx, (request, session) => bySession.set(request, session));

  for (const routes of [
    assetRoutes,
    ownerQuestRoutes,
    batchRoutes,
    reversalRoutes,
    webhookRoutes,
    operatorOwnerRoutes,
    operatorQuestRoutes,
    operatorCampaignRoutes,
    operatorAccountRoutes,
    operatorFlagRoutes,
    operatorAuditRoutes,
    operatorPoolRoutes,
  ])
    routes(app, ctx);
  signInRoutes(app, ctx, authFailures);
}
