import cookie from '@fastify/cookie';
import formbody from '@fastify/formbody';
import { DomainError, STATUS_BY_CODE } from '@quest/domain';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { handleError, mapError } from '../errors.ts';
import type { AuthFailureLimit } from '../rate-limits.ts';
import type { RouteDeps } from '../types.ts';
import { CONSOLE_CSS, CONSOLE_JS, FAVICON_SVG } from './assets.ts';
import { CONSOLE_PATH, type ConsoleContext } from './context.ts';
import { html, layout, type Viewer } from './html.ts';
import { operatorRoutes } from './operator.ts';
import { operatorPoolRoutes } from './operator-pool.ts';
import { ownerRoutes } from './owner.ts';
import { type ConsoleSession, ConsoleSessions, csrfMatches, SESSION_COOKIE } from './sessions.ts';

export { CONSOLE_PATH };

const wantsJson = (request: FastifyRequest) =>
  request.url.startsWith(`${CONSOLE_PATH}/api/`) ||
  String(request.headers['content-type'] ?? '').startsWith('text/csv') ||
  (String(request.headers.accept ?? '').includes('application/json') && !String(request.headers.accept).includes('text/html'));

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Is a state-changing request from this site? SameSite=Strict keeps the session cookie off
 * cross-site requests already; this also refuses them when the browser says where they come from
 * (Origin, or Sec-Fetch-Site), which covers the sign-in form (no session yet, so no token).
 */
function sameOrigin(request: FastifyRequest): boolean {
  const origin = request.headers.origin;
  if (origin === 'null') return false;
  if (typeof origin === 'string') {
    // The host alone: behind a proxy that terminates TLS without TRUST_PROXY, the page's origin is
    // https:// while this process sees http://, and no browser lets a page forge its Origin.
    try {
      return new URL(origin).host === request.host;
    } catch {
      return false;
    }
  }
  const site = request.headers['sec-fetch-site'];
  return site === undefined || site === 'same-origin' || site === 'none';
}

/**
 * The browser console at /console: server-rendered pages for quest owners (signed in with their
 * `sk_` key) and operators (ADMIN_TOKEN), on a session cookie. Registered in a context of its own,
 * so its cookie and form parsing, its hooks and its HTML error pages touch no API route: the spec's
 * routes keep taking only `x-api-key` and answering JSON.
 */
export async function consolePlugin(app: FastifyInstance, opts: { deps: RouteDeps; authFailures: AuthFailureLimit }) {
  const { deps, authFailures } = opts;
  const sessions = new ConsoleSessions(deps.sql, deps.config.ADMIN_TOKEN);
  const bySession = new WeakMap<FastifyRequest, ConsoleSession>();

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

  const viewer = (request: FastifyRequest): Viewer | undefined => {
    const s = bySession.get(request);
    if (!s) return undefined;
    return { kind: s.kind, name: s.kind === 'owner' ? s.ownerName : 'Operator', csrfToken: s.csrfToken };
  };
  const ctx: ConsoleContext = {
    deps,
    sessions,
    session: (request) => bySession.get(request),
    owner(request) {
      const s = bySession.get(request);
      if (s?.kind !== 'owner') throw new DomainError('INVALID_API_KEY', 'Sign in to the console first.');
      return s;
    },
    viewer,
    page(reply, { title, request, body, flash, status }) {
      return reply
        .code(status ?? 200)
        .type('text/html; charset=utf-8')
        .send(layout({ title, viewer: viewer(request), body, flash }));
    },
  };

  app.setErrorHandler((error, request, reply) => {
    if (wantsJson(request)) return handleError(error, request, reply);
    const mapped = mapError(error);
    const status = STATUS_BY_CODE[mapped.code];
    if (status >= 500) request.log.error({ err: error, code: mapped.code }, 'console request failed');
    if (reply.getHeader('retry-after') === undefined && status === 503) reply.header('retry-after', '1');
    const body = html`<p role="alert" class="error"><strong>${mapped.code}</strong>: ${mapped.message}</p>
      <p><a href="${CONSOLE_PATH}/">Console home</a></p>
      <p class="muted">Request id <code>${request.id}</code></p>`;
    return ctx.page(reply, { title: status === 429 ? 'Too many attempts' : 'That did not work', request, body, status });
  });

  // Security headers on every console answer: no framing, no foreign scripts or styles, nothing cached.
  app.addHook('onSend', async (request, reply, payload) => {
    reply.header(
      'content-security-policy',
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    );
    reply.header('x-frame-options', 'DENY');
    reply.header('referrer-policy', 'same-origin');
    reply.header('x-content-type-options', 'nosniff');
    if (!request.url.startsWith(`${CONSOLE_PATH}/assets/`)) reply.header('cache-control', 'no-store');
    return payload;
  });

  // The session, from the cookie: one primary-key lookup (joined with its API key, so a revoked key has none).
  app.addHook('onRequest', async (request) => {
    if (request.url.startsWith(`${CONSOLE_PATH}/assets/`)) return;
    const session = await sessions.find(request.cookies[SESSION_COOKIE]);
    if (session) bySession.set(request, session);
  });

  // The route's role, then CSRF for anything that changes state.
  app.addHook('preHandler', async (request, reply) => {
    const role = request.routeOptions.config.consoleRole ?? 'public';
    const session = bySession.get(request);
    if (role !== 'public' && session?.kind !== role) {
      if (SAFE_METHODS.has(request.method) && !wantsJson(request)) {
        return reply.redirect(session ? `${CONSOLE_PATH}/` : `${CONSOLE_PATH}/sign-in`, 303);
      }
      throw new DomainError('INVALID_API_KEY', 'Your console session has ended or does not allow this; sign in again.');
    }
    if (SAFE_METHODS.has(request.method)) return;
    if (!sameOrigin(request)) throw new DomainError('VALIDATION_FAILED', 'Cross-site request refused.');
    if (session) {
      const presented = request.headers['x-csrf-token'] ?? (request.body as { _csrf?: unknown } | undefined)?._csrf;
      if (!csrfMatches(presented, session.csrfToken))
        throw new DomainError(
          'VALIDATION_FAILED',
          'The form is out of date (CSRF token mismatch); reload the page and try again.',
        );
    }
  });

  app.get('/assets/console.css', { config: { consoleRole: 'public' } }, async (_request, reply) =>
    reply.type('text/css; charset=utf-8').header('cache-control', 'public, max-age=300').send(CONSOLE_CSS),
  );
  app.get('/assets/console.js', { config: { consoleRole: 'public' } }, async (_request, reply) =>
    reply.type('text/javascript; charset=utf-8').header('cache-control', 'public, max-age=300').send(CONSOLE_JS),
  );

  app.get('/assets/favicon.svg', { config: { consoleRole: 'public' } }, async (_request, reply) =>
    reply.type('image/svg+xml').header('cache-control', 'public, max-age=86400').send(FAVICON_SVG),
  );

  app.get('/', { config: { consoleRole: 'public' } }, async (request, reply) => {
    const session = bySession.get(request);
    if (!session) return reply.redirect(`${CONSOLE_PATH}/sign-in`, 303);
    return reply.redirect(session.kind === 'owner' ? `${CONSOLE_PATH}/quests` : `${CONSOLE_PATH}/operator`, 303);
  });

  const signInForm = (message?: string) =>
    html`${message ? html`<p role="alert" class="error">${message}</p>` : ''}
    <form method="post" action="${CONSOLE_PATH}/sign-in" class="stack">
      <label for="apiKey">API key (or operator token)</label>
      <input id="apiKey" name="apiKey" type="password" autocomplete="current-password" required autofocus
        aria-describedby="apiKey-help" maxlength="500">
      <p id="apiKey-help" class="muted">Quest owners: your <code>sk_…</code> key. Operators: the ADMIN_TOKEN.
        The key is exchanged for a session cookie; this page does not keep it.</p>
      <div><button type="submit">Sign in</button></div>
    </form>`;

  app.get('/sign-in', { config: { consoleRole: 'public' } }, async (request, reply) => {
    if (bySession.get(request)) return reply.redirect(`${CONSOLE_PATH}/`, 303);
    return ctx.page(reply, { title: 'Sign in', request, body: signInForm() });
  });

  app.post('/sign-in', { config: { consoleRole: 'public' } }, async (request, reply) => {
    await authFailures.check(request, reply);
    const apiKey = (request.body as { apiKey?: unknown } | undefined)?.apiKey;
    const opened = typeof apiKey === 'string' && apiKey.length <= 500 ? await sessions.signIn(apiKey.trim()) : undefined;
    if (!opened) {
      await authFailures.add(request);
      request.log.info({ console: 'sign-in refused' }, 'console sign-in refused');
      // The same answer for an unknown, revoked or malformed key: nothing tells whether a key exists.
      return ctx.page(reply, {
        title: 'Sign in',
        request,
        status: 401,
        body: signInForm('Sign-in failed: that key or token is not valid.'),
      });
    }
    reply.setCookie(SESSION_COOKIE, opened.token, {
      path: CONSOLE_PATH,
      httpOnly: true,
      sameSite: 'strict',
      // Over HTTPS (as Fastify sees it: behind a proxy with TRUST_PROXY, from X-Forwarded-Proto).
      secure: request.protocol === 'https',
      expires: opened.expiresAt,
      maxAge: Math.floor((opened.expiresAt.getTime() - Date.now()) / 1000),
    });
    return reply.redirect(`${CONSOLE_PATH}/`, 303);
  });

  app.post('/sign-out', { config: { consoleRole: 'public' } }, async (request, reply) => {
    const session = bySession.get(request);
    if (session) await sessions.end(session);
    reply.clearCookie(SESSION_COOKIE, { path: CONSOLE_PATH });
    return reply.redirect(`${CONSOLE_PATH}/sign-in`, 303);
  });

  ownerRoutes(app, ctx);
  operatorRoutes(app, ctx);
  operatorPoolRoutes(app, ctx);
}
