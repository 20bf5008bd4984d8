import { createSql } from '@quest/db';
import { hashApiKey } from '@quest/domain';
import { plainApp, serve } from './plain-http.ts';
import { plainAllocate } from './plain-ledger.ts';

/**
 * The REFERENCE: what a user would write instead of this project — a plain Fastify +
 * postgres.js service that runs one five-statement transaction per request inline
 * (`plain-ledger.ts`: the key with the quest it names and the quest's lock, the account, the
 * payout, the balance, the budget; each statement awaited in turn): no queue, no Redis, no worker,
 * no coalescing, no auth cache, no stored rejections, no events. It validates the body with a JSON
 * schema and answers 200 with the payout, 400 with a rejection's code, 401/404 for the key and the
 * quest (`plain-http.ts`, shared with the obvious-queue peer). Same schema as the service (same
 * indexes and triggers). Bench-only; never shipped.
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

const app = plainApp({
  ready: () => sql`select 1`,
  allocate: ({ apiKey, questId, points, address }) =>
    plainAllocate(sql, { keyHash: hashApiKey(apiKey), questId, points, address }),
});

await serve(app, () => sql.end({ timeout: 5 }));
