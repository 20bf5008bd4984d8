import type { FastifyInstance } from 'fastify';
import { CONSOLE_PATH } from './console/context.ts';

/**
 * `GET /`: where to go from here. The spec has no `/` route and no redirect status, so this is a
 * 200 that points at the console, the interactive docs and the OpenAPI document — an HTML page for
 * a browser, the same links as JSON for everything else. Hidden from the document: not part of
 * the API.
 */

export const ROOT_LINKS = {
  console: { href: CONSOLE_PATH, title: 'Console: quests, credits and payouts in the browser' },
  docs: { href: '/docs', title: 'API documentation, interactive' },
  openapi: { href: '/openapi.json', title: 'OpenAPI 3.1 document' },
} as const;

const PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Quest Rewards API</title></head>
<body><h1>Quest Rewards API</h1><ul>
${Object.values(ROOT_LINKS)
  .map((l) => `<li><a href="${l.href}">${l.title}</a> <code>${l.href}</code></li>`)
  .join('\n')}
</ul></body></html>
`;

// A browser names text/html before anything else; curl sends any type, clients ask for JSON.
function wantsHtml(accept: string | undefined): boolean {
  const html = accept?.indexOf('text/html') ?? -1;
  const json = accept?.indexOf('application/json') ?? -1;
  return html >= 0 && (json < 0 || html < json);
}

export async function rootRoute(app: FastifyInstance): Promise<void> {
  app.get('/', { schema: { hide: true } }, async (request, reply) => {
    reply.header('vary', 'accept').header('cache-control', 'no-cache');
    if (wantsHtml(request.headers.accept)) return reply.type('text/html; charset=utf-8').send(PAGE);
    return { name: 'Quest Rewards API', links: ROOT_LINKS };
  });
}
