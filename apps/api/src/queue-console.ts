import { createHash, timingSafeEqual } from 'node:crypto';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter } from '@bull-board/fastify';
import { Queue } from 'bullmq';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { DomainError } from '@quest/domain';
import { partitionQueueName, redisConnection, WEBHOOK_QUEUE } from '@quest/queue';
import { mapError, sendError } from './errors.ts';

export const QUEUE_CONSOLE_PATH = '/admin/queues';

export interface QueueConsoleOptions {
  token: string;
  redisUrl: string;
  /** The queues' Redis key prefix (not named `prefix`: fastify reads that as a route prefix). */
  queuePrefix: string;
  partitions: number;
  /** Let the operator retry, promote, clean and remove jobs; read-only otherwise. */
  allowActions: boolean;
}

const digest = (s: string) => createHash('sha256').update(s).digest();

/**
 * The operator token from `Authorization: Bearer …` or from HTTP Basic auth (any user name, the
 * token as password), which lets a browser log in with its own prompt.
 */
function presentedToken(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const [scheme, value] = header.split(' ', 2);
  if (!value) return undefined;
  if (scheme?.toLowerCase() === 'bearer') return value.trim();
  if (scheme?.toLowerCase() === 'basic') {
    const decoded = Buffer.from(value, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    return colon >= 0 ? decoded.slice(colon + 1) : undefined;
  }
  return undefined;
}

/**
 * Answer with the API's error envelope. Sent here rather than thrown: bull-board's routes have an
 * error handler of their own, which would render a thrown error in its format.
 */
const refuse = (request: FastifyRequest, reply: FastifyReply, error: DomainError) => sendError(request, reply, mapError(error));

/**
 * bull-board's queue console at /admin/queues, for operators only: guarded by ADMIN_TOKEN (never
 * by quest owners' API keys), compared in constant time. Registered only when a token is set.
 */
export const queueConsole: FastifyPluginAsync<QueueConsoleOptions> = async (app, opts) => {
  const expected = digest(opts.token);
  app.addHook('onRequest', async (request, reply) => {
    const token = presentedToken(request.headers.authorization);
    if (token === undefined || !timingSafeEqual(digest(token), expected)) {
      reply.header('www-authenticate', 'Basic realm="quest-admin", charset="UTF-8"');
      return refuse(request, reply, new DomainError('ADMIN_TOKEN_INVALID'));
    }
    // Read-only means read-only on the server too, whatever the board's own checks do.
    if (!opts.allowActions && request.method !== 'GET' && request.method !== 'HEAD') {
      return refuse(
        request,
        reply,
        new DomainError('METHOD_NOT_ALLOWED', 'The queue console is read-only (ADMIN_QUEUE_ACTIONS=false).'),
      );
    }
  });

  // Fail a page load fast when Redis is away instead of waiting for it forever.
  const connection = redisConnection(opts.redisUrl, { maxRetriesPerRequest: 1 });
  connection.on('error', () => {});
  // The partitions, then the webhook delivery queue.
  const queues = [...Array.from({ length: opts.partitions }, (_, p) => partitionQueueName(p)), WEBHOOK_QUEUE].map((name) => {
    const q = new Queue(name, { connection, prefix: opts.queuePrefix });
    q.on('error', () => {});
    return q;
  });
  const serverAdapter = new FastifyAdapter();
  serverAdapter.setBasePath(QUEUE_CONSOLE_PATH);
  createBullBoard({
    queues: queues.map((q) => new BullMQAdapter(q, { readOnlyMode: !opts.allowActions, allowRetries: opts.allowActions })),
    serverAdapter,
    options: { uiConfig: { boardTitle: 'Quest Rewards queues' } },
  });
  await app.register(serverAdapter.registerPlugin(), { prefix: QUEUE_CONSOLE_PATH });
  app.addHook('onClose', async () => {
    await Promise.allSettled(queues.map((q) => q.close()));
    connection.disconnect();
  });
};
