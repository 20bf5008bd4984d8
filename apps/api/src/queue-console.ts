import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter } from '@bull-board/fastify';
import { Queue } from 'bullmq';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { DomainError } from '@quest/domain';
import { partitionQueueName, redisConnection, WEBHOOK_QUEUE } from '@quest/queue';
import { mapError, sendError } from './errors.ts';
import type { AuthFailureLimit } from './rate-limits.ts';

export const QUEUE_CONSOLE_PATH = '/admin/queues';

export interface QueueConsoleOptions {
  token: string;
  redisUrl: string;
  /** The queues' Redis key prefix (not named `prefix`: fastify reads that as a route prefix). */
  queuePrefix: string;
  partitions: number;
  /** Let the operator retry, promote, clean and remove jobs; read-only otherwise. */
  allowActions: boolean;
  /** The failed-authentication limit the API keys and the console's sign-in count against too. */
  authFailures: AuthFailureLimit;
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
 * The console's fonts (IBM Plex, as bull-board's page asks for them), served by the API itself:
 * bull-board's page links them from Google Fonts, which fails offline and tells a third party
 * every operator's address. Latin subsets, from the @fontsource packages, read once at start-up.
 */
const FONTS: { family: string; pkg: string; file: string; weights: number[] }[] = [
  { family: 'IBM Plex Sans', pkg: '@fontsource/ibm-plex-sans', file: 'ibm-plex-sans', weights: [400, 500, 600] },
  { family: 'IBM Plex Mono', pkg: '@fontsource/ibm-plex-mono', file: 'ibm-plex-mono', weights: [400, 500] },
];
export const CONSOLE_FONTS_CSS = 'fonts/plex.css';

function loadFonts(): { css: string; files: Map<string, Buffer> } {
  const require = createRequire(import.meta.url);
  const files = new Map<string, Buffer>();
  const faces: string[] = [];
  for (const font of FONTS) {
    const dir = join(dirname(require.resolve(`${font.pkg}/package.json`)), 'files');
    for (const weight of font.weights) {
      const name = `${font.file}-latin-${weight}-normal.woff2`;
      files.set(name, readFileSync(join(dir, name)));
      faces.push(
        `@font-face{font-family:'${font.family}';font-style:normal;font-display:swap;font-weight:${weight};src:url(./${name}) format('woff2')}`,
      );
    }
  }
  return { css: `${faces.join('\n')}\n`, files };
}

/** bull-board's page links Google Fonts; the page the API serves links its own copy instead. */
const EXTERNAL_FONTS = /<link[^>]*href="https:\/\/fonts\.googleapis\.com[^"]*"[^>]*>/g;

/**
 * bull-board's queue console at /admin/queues, for operators only: guarded by ADMIN_TOKEN (never
 * by quest owners' API keys), compared in constant time. Registered only when a token is set.
 */
export const queueConsole: FastifyPluginAsync<QueueConsoleOptions> = async (app, opts) => {
  const expected = digest(opts.token);
  app.addHook('onRequest', async (request, reply) => {
    const token = presentedToken(request.headers.authorization);
    if (token !== undefined) {
      // Thrown as RATE_LIMITED once the address has failed too often; answered here (see refuse).
      const limited = await opts.authFailures.check(request, reply).then(
        () => undefined,
        (error: unknown) => error,
      );
      if (limited) return sendError(request, reply, mapError(limited));
    }
    if (token === undefined || !timingSafeEqual(digest(token), expected)) {
      // A wrong token counts as a failed authentication; none at all is a browser before its prompt.
      if (token !== undefined) await opts.authFailures.add(request);
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
    // The labels in English whatever the browser's language: the page would otherwise pick its
    // locale file from navigator.language.
    options: { uiConfig: { boardTitle: 'Quest Rewards queues', locale: { lng: 'en-US' } } },
  });

  const fonts = loadFonts();
  app.get(`${QUEUE_CONSOLE_PATH}/${CONSOLE_FONTS_CSS}`, { schema: { hide: true } }, async (_request, reply) =>
    reply.type('text/css; charset=utf-8').header('cache-control', 'public, max-age=86400').send(fonts.css),
  );
  app.get<{ Params: { file: string } }>(
    `${QUEUE_CONSOLE_PATH}/fonts/:file`,
    { schema: { hide: true } },
    async (request, reply) => {
      const file = fonts.files.get(request.params.file);
      if (!file) return refuse(request, reply, new DomainError('ROUTE_NOT_FOUND'));
      return reply.type('font/woff2').header('cache-control', 'public, max-age=86400').send(file);
    },
  );
  app.addHook('onSend', async (_request, reply, payload) => {
    if (typeof payload !== 'string' || !String(reply.getHeader('content-type') ?? '').startsWith('text/html')) return payload;
    return payload.replace(EXTERNAL_FONTS, `<link href="${CONSOLE_FONTS_CSS}" rel="stylesheet">`);
  });
  await app.register(serverAdapter.registerPlugin(), { prefix: QUEUE_CONSOLE_PATH });
  app.addHook('onClose', async () => {
    await Promise.allSettled(queues.map((q) => q.close()));
    connection.disconnect();
  });
};
