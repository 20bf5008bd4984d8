import { pingDatabase } from '@quest/db';
import { DomainError, healthViewSchema, type ReadinessChecks, readinessViewSchema } from '@quest/domain';
import type { FastifyBaseLogger } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { documented, errorResponses } from '../openapi/responses.ts';
import type { ApiDeps } from '../types.ts';

/** A probe that takes longer than this counts as failed: a hung dependency is not ready. */
const CHECK_TIMEOUT_MS = 2000;

async function probe(name: string, check: () => Promise<unknown>, log: FastifyBaseLogger): Promise<'ok' | 'unavailable'> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${name} check timed out after ${CHECK_TIMEOUT_MS} ms`)), CHECK_TIMEOUT_MS);
  });
  try {
    await Promise.race([check(), timeout]);
    return 'ok';
  } catch (err) {
    log.warn({ err, check: name }, 'readiness check failed');
    return 'unavailable';
  } finally {
    clearTimeout(timer);
  }
}

/** GET /healthz (the process answers) and GET /readyz (Postgres and the queue answer too). */
export const healthRoutes: FastifyPluginAsyncZod<{ deps: ApiDeps }> = async (app, { deps }) => {
  app.get(
    '/healthz',
    {
      schema: {
        operationId: 'getHealth',
        tags: ['health'],
        summary: 'Liveness: the process is up',
        description:
          'Answers 200 while the process serves HTTP, without asking PostgreSQL or Redis, so an orchestrator ' +
          'restarts only a process that is itself stuck; whether it can do work is `GET /readyz`. Needs no key ' +
          'and is never rate limited.',
        security: [],
        response: {
          200: documented(healthViewSchema, { description: 'The process is up.', example: { status: 'ok' } }),
          ...errorResponses(
            {
              400: {
                description: 'VALIDATION_FAILED: a malformed request, e.g. HTTP/1.1 without a Host header.',
                codes: [{ code: 'VALIDATION_FAILED', message: 'The Host header is required.', details: undefined }],
              },
            },
            { omit: [429, 503] },
          ),
        },
      },
    },
    async () => ({ status: 'ok' as const }),
  );

  app.get(
    '/readyz',
    {
      schema: {
        operationId: 'getReadiness',
        tags: ['health'],
        summary: 'Readiness: PostgreSQL and the allocation queue answer; how many workers are alive',
        description: 'On 503, `details.checks` says which dependency failed.',
        security: [],
        response: {
          200: documented(readinessViewSchema, {
            description: 'PostgreSQL and the queue answer; `workers` says how many worker processes are alive.',
            example: { status: 'ok', checks: { database: 'ok', queue: 'ok' }, workers: 3 },
          }),
          ...errorResponses({
            503: {
              description: 'DATABASE_UNAVAILABLE or QUEUE_UNAVAILABLE; details.checks names the failed dependency.',
              codes: [
                {
                  code: 'QUEUE_UNAVAILABLE',
                  message: 'Not ready: queue unavailable.',
                  details: { checks: { database: 'ok', queue: 'unavailable' } },
                },
                {
                  code: 'DATABASE_UNAVAILABLE',
                  message: 'Not ready: database unavailable.',
                  details: { checks: { database: 'unavailable', queue: 'ok' } },
                },
              ],
            },
          }),
        },
      },
    },
    async (request) => {
      const [database, queue] = await Promise.all([
        probe('database', () => pingDatabase(deps.sql), request.log),
        probe('queue', () => deps.allocator.ping(), request.log),
      ]);
      const checks: ReadinessChecks = { database, queue };
      if (database === 'ok' && queue === 'ok') {
        const workers = await deps.allocator.liveWorkers().catch(() => 0);
        if (workers === 0) request.log.warn('no worker is alive: allocations are queued but nothing decides them');
        return { status: 'ok' as const, checks, workers };
      }
      const code = database === 'ok' ? 'QUEUE_UNAVAILABLE' : 'DATABASE_UNAVAILABLE';
      const failed = Object.entries(checks)
        .filter(([, state]) => state !== 'ok')
        .map(([name]) => name);
      throw new DomainError(code, `Not ready: ${failed.join(' and ')} unavailable.`, { checks });
    },
  );
};
