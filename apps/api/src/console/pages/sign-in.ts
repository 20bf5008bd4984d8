import type { FastifyInstance } from 'fastify';
import type { AuthFailureLimit } from '../../rate-limits.ts';
import { CONSOLE_PATH, type ConsoleContext, consolePath, PUBLIC } from '../context.ts';
import { html } from '../html.ts';
import { SESSION_COOKIE } from '../sessions.ts';

const signInForm = (message?: string) =>
  html`${message ? html`<p role="alert" class="error">${message}</p>` : ''}
  <form method="post" action="${consolePath('sign-in')}" class="stack">
    <label for="apiKey">API key (or operator token)</label>
    <input id="apiKey" name="apiKey" type="password" autocomplete="current-password" required autofocus
      aria-describedby="apiKey-help" maxlength="500">
    <p id="apiKey-help" class="muted">Quest owners: your <code>sk_…</code> key. Operators: the ADMIN_TOKEN.
      The key is exchanged for a session cookie; this page does not keep it.</p>
    <div><button type="submit">Sign in</button></div>
  </form>`;

/**
 * Signing in and out: a key (or the operator token) exchanged for a session cookie, failures
 * counted like the API's failed authentications; the console's root leads to the signed-in
 * viewer's first page.
 */
export function signInRoutes(app: FastifyInstance, ctx: ConsoleContext, authFailures: AuthFailureLimit): void {
  app.get('/', PUBLIC, async (request, reply) => {
    const session = ctx.session(request);
    if (!session) return reply.redirect(consolePath('sign-in'), 303);
    return reply.redirect(session.kind === 'owner' ? consolePath('quests') : consolePath('operator'), 303);
  });

  app.get('/sign-in', PUBLIC, async (request, reply) => {
    if (ctx.session(request)) return reply.redirect(consolePath(''), 303);
    return ctx.page(reply, { title: 'Sign in', request, body: signInForm() });
  });

  app.post('/sign-in', PUBLIC, async (request, reply) => {
    await authFailures.check(request, reply);
    const apiKey = (request.body as { apiKey?: unknown } | undefined)?.apiKey;
    const opened = typeof apiKey === 'string' && apiKey.length <= 500 ? await ctx.sessions.signIn(apiKey.trim()) : undefined;
    if (!opened) {
      await authFailures.add(request);
      request.log.info({ console: 'sign-in refused' }, 'console sign-in refused');
      // The same answer for an unknown, revoked or malformed key: nothing tells whether a key exists.
      const body = signInForm('Sign-in failed: that key or token is not valid.');
      return ctx.page(reply, { title: 'Sign in', request, status: 401, body });
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
    return reply.redirect(consolePath(''), 303);
  });

  app.post('/sign-out', PUBLIC, async (request, reply) => {
    const session = ctx.session(request);
    if (session) await ctx.sessions.end(session);
    reply.clearCookie(SESSION_COOKIE, { path: CONSOLE_PATH });
    return reply.redirect(consolePath('sign-in'), 303);
  });
}
