import { createSql } from '@quest/db';
import { hashApiKey, isWellFormedApiKey } from '@quest/domain';
import Fastify from 'fastify';
import { plainAllocate } from './plain-ledger.ts';

/**
 * The REFERENCE: what a user would write instead of this project — a plain Fastify +
 * postgres.js service that runs one five-statement transaction per request inline
 * (`plain-ledger.ts`: the key with the quest it names and the quest's lock, the account, the
 * payout, the balance, the budget; each statement awaited in turn): no queue, no Redis, no worker,
 * no coalescing, no auth cache, no stored rejections, no events. It validates the body with a JSON
 * schema and answers 200 with the payout, 400 with a rejection's code, 401/404 for the key and the
 * quest. Same schema as the service (same indexes and triggers). Bench-only; never shipped.
 *
 * Until 2026-11-27 the reference ran the service's own ledger transaction (`applyRequests`, which
 * also writes the outbox's event and guards replays) behind an auth cache: not what a user would
 * write, and measured heavier (docs/performance.md, "A lean reference").
 *
 * Env: DATABASE_URL, PORT, HOST (127.0.0.1), DATABASE_POOL_MAX (10, the API's default).
 */

const sql = createSql(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres', {
  max: Number(process.env.DATABASE_POOL_MAX ?? 10),
  // Let go of idle connections at once: the limit runs that follow need 64 of the shared server's 100.
  idleTimeout: 1,
  applicationName: 'quest-bench-reference',
});

const app = Fastify({ logger: false });

app.get('/readyz', async () => {
  await sql`select 1`;
  return { status: 'ok' };
});

const STATUS = { INVALID_API_KEY: 401, NOT_QUEST_OWNER: 401, QUEST_NOT_FOUND: 404 } as const;

app.post<{ Params: { questId: number }; Body: { points: number; address: string } }>(
  '/quests/:questId',
  {
    schema: {
      params: { type: 'object', properties: { questId: { type: 'integer', minimum: 1 } }, required: ['questId'] },
      body: {
        type: 'object',
        additionalProperties: false,
        required: ['points', 'address'],
        properties: {
          points: { type: 'integer', minimum: 1, maximum: 1_000_000_000 },
          address: { type: 'string', pattern: '^0x[0-9a-fA-F]{40}$' },
        },
      },
    },
  },
  async (request, reply) => {
    const apiKey = request.headers['x-api-key'];
    if (typeof apiKey !== 'string' || !isWellFormedApiKey(apiKey)) return reply.code(401).send({ code: 'INVALID_API_KEY' });
    const { points, address } = request.body;
    const outcome = await plainAllocate(sql, { keyHash: hashApiKey(apiKey), questId: request.params.questId, points, address });
    if (outcome.status === 'completed') return { payout: outcome.payout };
    const status = (STATUS as Record<string, number>)[outcome.code] ?? 400;
    return reply.code(status).send({ code: outcome.code });
  },
);

await app.listen({ host: process.env.HOST ?? '127.0.0.1', port: Number(process.env.PORT ?? 3100) });

const stop = async () => {
  await app.close();
  await sql.end({ timeout: 5 });
  process.exit(0);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
