import type { FastifyReply, FastifyRequest } from 'fastify';
import type { RouteDeps } from '../types.ts';
import type { Html, Viewer } from './html.ts';
import type { ConsoleSession, ConsoleSessions } from './sessions.ts';

export { CONSOLE_PATH, consolePath } from './paths.ts';

/** What the console's route files share. */
export interface ConsoleContext {
  deps: RouteDeps;
  sessions: ConsoleSessions;
  /** The request's session (set by the console's onRequest hook). */
  session(request: FastifyRequest): ConsoleSession | undefined;
  /** The signed-in owner, or the operator: what the guards let through to a route of that role. */
  owner(request: FastifyRequest): ConsoleSession & { kind: 'owner' };
  viewer(request: FastifyRequest): Viewer | undefined;
  page(
    reply: FastifyReply,
    opts: { title: string; request: FastifyRequest; body: Html; flash?: string; status?: number },
  ): FastifyReply;
}

type Role = 'owner' | 'operator' | 'public';

/** Route options of a page for quest owners, for the operator, and for anyone. */
export const OWNER = { config: { consoleRole: 'owner' as const } };
export const OPERATOR = { config: { consoleRole: 'operator' as const } };
export const PUBLIC = { config: { consoleRole: 'public' as const } };

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The console role a route needs; 'public' for sign-in and assets. */
    consoleRole?: Role;
  }
}
