import type { FastifyInstance } from 'fastify';
import type { ConsoleContext } from './plugin.ts';

/** The owner's webhook endpoints (not built yet). */
export function webhookRoutes(_app: FastifyInstance, _ctx: ConsoleContext): void {}
