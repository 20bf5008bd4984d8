import { isWellFormedApiKey } from '@quest/domain';
import Fastify, { type FastifyInstance } from 'fastify';
import type { PlainOutcome } from './plain-ledger.ts';

/**
 * The HTTP face both bench peers share (the lean reference and the obvious-queue peer): `POST
 * /quests/:questId {points, address}` with the key in `x-api-key`, the body validated by a JSON
 * schema, 200 with the payout, 400 with a rejection's code, 401/404 for the key and the quest; and
 * `GET /readyz`. Only how a request is decided differs (`allocate`). Bench-only; never shipped.
 */

export interface PlainRequest {
  apiKey: string;
  questId: number;
  points: number;
  address: string;
}

const STATUS: Partial<Record<string, number>> = { INVALID_API_KEY: 401, NOT_QUEST_OWNER: 401, QUEST_NOT_FOUND: 404 };

export function plainApp(deps: {
  ready(): Promise<unknown>;
  allocate(req: PlainRequest): Promise<PlainOutcome>;
}): FastifyInstance {
  const app = Fastify({ logger: false });

  app.get('/readyz', async (_request, reply) => {
    // Not ready (503) rather than a 500 while what it waits for is missing.
    return (await deps.ready()) === false ? reply.code(503).send({ status: 'starting' }) : { status: 'ok' };
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
      if (typeof apiKey !== 'string' || !isWellFormedApiKey(apiKey)) return reply.code(401).send({ code: 'INVALID_API_KEY' });
      const { points, address } = request.body;
      const outcome = await deps.allocate({ apiKey, questId: request.params.questId, points, address });
      if (outcome.status === 'completed') return { payout: outcome.payout };
      return reply.code(STATUS[outcome.code] ?? 400).send({ code: outcome.code });
    },
  );
  return app;
}

/** Listen on HOST:PORT and close `app` and then `close()` on SIGTERM/SIGINT. */
export async function serve(app: FastifyInstance, close: () => Promise<unknown>): Promise<void> {
  await app.listen({ host: process.env.HOST ?? '127.0.0.1', port: Number(process.env.PORT ?? 3100) });
  const stop = async () => {
    await app.close();
    await close();
    process.exit(0);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
