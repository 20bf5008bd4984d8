import { DomainError } from '@quest/domain';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type ConsoleContext, consolePath } from './context.ts';
import { type ConsoleSession, csrfMatches, SESSION_COOKIE } from './sessions.ts';

const ASSETS = consolePath('assets', '');
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** Whether the request is the console's script asking (JSON answers and errors), not a page. */
export const wantsJson = (request: FastifyRequest) =>
  request.url.startsWith(consolePath('api', '')) ||
  String(request.headers['content-type'] ?? '').startsWith('text/csv') ||
  (String(request.headers.accept ?? '').includes('application/json') && !String(request.headers.accept).includes('text/html'));

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

/** The route's role, then CSRF for anything that changes state. */
function guard(ctx: ConsoleContext) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const role = request.routeOptions.config.consoleRole ?? 'public';
    const session = ctx.session(request);
    if (role !== 'public' && session?.kind !== role) {
      if (SAFE_METHODS.has(request.method) && !wantsJson(request))
        return reply.redirect(session ? consolePath('') : consolePath('sign-in'), 303);
      throw new DomainError('INVALID_API_KEY', 'Your console session has ended or does not allow this; sign in again.');
    }
    if (SAFE_METHODS.has(request.method)) return;
    if (!sameOrigin(request)) throw new DomainError('VALIDATION_FAILED', 'Cross-site request refused.');
    if (!session) return;
    const presented = request.headers['x-csrf-token'] ?? (request.body as { _csrf?: unknown } | undefined)?._csrf;
    if (!csrfMatches(presented, session.csrfToken))
      throw new DomainError('VALIDATION_FAILED', 'The form is out of date (CSRF token mismatch); reload the page and try again.');
  };
}

/**
 * The console's hooks: security headers on every answer, the session from its cookie (stored
 * with `remember`), and the guard of each route's role and of every state change.
 */
export function consoleHooks(
  app: FastifyInstance,
  ctx: ConsoleContext,
  remember: (request: FastifyRequest, session: ConsoleSession) => void,
): void {
  // No framing, no foreign scripts or styles, nothing cached but the assets.
  app.addHook('onSend', async (request, reply, payload) => {
    reply.header(
      'content-security-policy',
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    );
    reply.header('x-frame-options', 'DENY');
    reply.header('referrer-policy', 'same-origin');
    reply.header('x-content-type-options', 'nosniff');
    if (!request.url.startsWith(ASSETS)) reply.header('cache-control', 'no-store');
    return payload;
  });

  // The session, from the cookie: one primary-key lookup (joined with its API key, so a revoked key has none).
  app.addHook('onRequest', async (request) => {
    if (request.url.startsWith(ASSETS)) return;
    const session = await ctx.sessions.find(request.cookies[SESSION_COOKIE]);
    if (session) remember(request, session);
  });

  app.addHook('preHandler', guard(ctx));
}
