import { applyRequests, createSql, findApiKeyWithQuest } from '@quest/db';
import { hashApiKey, isWellFormedApiKey, newId } from '@quest/domain';
import Fastify from 'fastify';

/**
 * The REFERENCE: what a user would write instead of this project — a plain Fastify +
 * postgres.js service that runs the same ledger transaction (`applyRequests` from @quest/db, same
 * schema) inline in the request: no queue, no Redis, no worker, no coalescing. It checks the key
 * and the quest's owner like the service (positive answers cached in memory, as the service's
 * AUTH_CACHE_TTL_MS does), validates the body with a JSON schema, and answers 200 with the payout
 * or 400 with the rejection. Bench-only; never shipped.
 *
 * Env: DATABASE_URL, PORT, HOST (127.0.0.1), DATABASE_POOL_MAX (10, the API's default).
 */

const sql = createSql(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres', {
  max: Number(process.env.DATABASE_POOL_MAX ?? 10),
  applicationName: 'quest-bench-reference',
});

const owners = new Map<string, string>();

const app = Fastify({ logger: false });

app.get('/readyz', async () => {
  await sql`select 1`;
  return { status: 'ok' };
});

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
    const { questId } = request.params;
    if (typeof apiKey !== 'string' || !isWellFormedApiKey(apiKey)) return reply.code(401).send({ code: 'INVALID_API_KEY' });
    const cacheKey = `${apiKey}:${questId}`;
    if (!owners.has(cacheKey)) {
      const row = await findApiKeyWithQuest(sql, hashApiKey(apiKey), questId);
      if (!row || row.revokedAt) return reply.code(401).send({ code: 'INVALID_API_KEY' });
      if (row.questId === null) return reply.code(404).send({ code: 'QUEST_NOT_FOUND' });
      if (row.questOwnerId !== row.ownerId) return reply.code(401).send({ code: 'NOT_QUEST_OWNER' });
      owners.set(cacheKey, row.ownerId);
    }
    const { points, address } = request.body;
    const [outcome] = await applyRequests(sql, [{ key: newId('alc'), questId, points, address }], { firstDelivery: true });
    if (outcome?.status === 'completed') return { payout: outcome.payout };
    return reply.code(400).send({ code: outcome?.status === 'rejected' ? outcome.code : 'ALLOCATION_FAILED' });
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
