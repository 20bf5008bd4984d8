import { Writable } from 'node:stream';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { createSql, type Sql, setFeatureFlags, type FeatureFlags } from '@quest/db';
import type { RequestItem, JobReply } from '@quest/domain';
import type { Allocator, Delivery } from '@quest/queue';
import { createTestDatabase, OpenApiContract, type TestDatabase, UNTHROTTLED_RATE_LIMITS } from '@quest/testing';
import { buildApp } from '../src/app.ts';
import { type ApiConfig, loadApiConfig } from '../src/env.ts';
import { FeatureFlagCache } from '../src/flags.ts';
import type { IdempotencyGuard } from '../src/services/idempotency.ts';
import type { Redis } from 'ioredis';
import { createLogger } from '../src/logger.ts';

// ---------------------------------------------------------------------------------------------
// The app under test: a fresh database per test file, the real app, and a checked `request`.
// ---------------------------------------------------------------------------------------------

/** An Allocator for read tests: reads never touch the queue; ping answers as told. */
export function readOnlyAllocator(ping: () => Promise<void> = async () => {}): Allocator {
  const unused = async (): Promise<never> => {
    throw new Error('the read API does not use the allocation queue');
  };
  return { allocate: unused, runBatch: unused, ping, liveWorkers: async () => 0, close: async () => {} };
}

/** An Allocator that accepts everything and decides nothing: every allocation and batch stays pending. */
export const pendingAllocator: Allocator = {
  allocate: async () => ({ kind: 'undecided', reason: 'timeout', job: 'queued', jobId: '1', enqueuedAt: Date.now() }),
  runBatch: async () => undefined,
  ping: async () => {},
  liveWorkers: async () => 1,
  close: async () => {},
};

/**
 * An Allocator whose answers a test scripts: `allocate` hands each request to `onAllocate` (which
 * may apply it with the real ledger, answer for it, or leave it undecided), `runBatch` to
 * `onBatch`. It stands in for the queue and the worker pool, so a route test needs no socket.
 */
export function scriptedAllocator(script: {
  onAllocate?: (item: RequestItem) => Promise<Delivery>;
  onBatch?: (data: { batchId: string; questId: number }) => Promise<JobReply<'batch'> | undefined>;
}): Allocator & { items: RequestItem[] } {
  const items: RequestItem[] = [];
  return {
    items,
    async allocate(item) {
      items.push(item);
      return script.onAllocate ? script.onAllocate(item) : pendingAllocator.allocate(item);
    },
    runBatch: async (data) => (script.onBatch ? script.onBatch(data) : undefined),
    ping: async () => {},
    liveWorkers: async () => 1,
    close: async () => {},
  };
}

/** Log lines written by the app, parsed. */
export class LogCapture extends Writable {
  readonly raw: string[] = [];
  override _write(chunk: Buffer, _encoding: string, callback: () => void): void {
    this.raw.push(...chunk.toString('utf8').split('\n').filter(Boolean));
    callback();
  }
  get lines(): Record<string, unknown>[] {
    return this.raw.map((line) => JSON.parse(line) as Record<string, unknown>);
  }
  get text(): string {
    return this.raw.join('\n');
  }
}

export interface TestAppOptions {
  /** Share a database (owned and dropped by the caller) instead of creating one. */
  db?: TestDatabase;
  env?: Record<string, string>;
  /** Replace the app's pool (e.g. one pointing at a closed port); flags still load from the test database. */
  sql?: Sql;
  allocator?: Allocator;
  logs?: LogCapture;
  idempotency?: IdempotencyGuard;
  /** Redis for shared rate-limit counters (in-process counters without it). */
  redis?: Redis;
  /** Feature-flag reload period; default 100 ms so switches show at once (production: FLAGS_REFRESH_MS). */
  flagsRefreshMs?: number;
  /** Keep the API's own rate-limit defaults (otherwise UNTHROTTLED_RATE_LIMITS, before `env`). */
  defaultRateLimits?: boolean;
  /** Hook to add test-only routes before the app is ready. */
  extend?: (app: FastifyInstance) => void;
}

export interface TestApp {
  app: FastifyInstance;
  db: TestDatabase;
  sql: Sql;
  config: ApiConfig;
  flags: FeatureFlagCache;
  contract: OpenApiContract;
  /** app.inject, then check the response against the OpenAPI document and the request-id rule. */
  request(opts: InjectOptions): Promise<LightMyRequestResponse>;
  close(): Promise<void>;
}

export async function startTestApp(opts: TestAppOptions = {}): Promise<TestApp> {
  // A small pool: many test files, and other suites, share one PostgreSQL server's connection limit.
  const db = opts.db ?? (await createTestDatabase({ max: 4 }));
  const config = loadApiConfig({
    DATABASE_URL: db.url,
    LOG_LEVEL: opts.logs ? 'info' : 'silent',
    // No metrics sampler in-process (it would read the default queue prefix); system tests run it.
    METRICS_SAMPLE_MS: '0',
    ...(opts.defaultRateLimits ? {} : UNTHROTTLED_RATE_LIMITS),
    ...opts.env,
  });
  const logger = createLogger(config.LOG_LEVEL, opts.logs);
  const flags = await FeatureFlagCache.start(db.sql, { refreshMs: opts.flagsRefreshMs ?? 100, logger });
  const app = await buildApp(config, {
    sql: opts.sql ?? db.sql,
    flags,
    allocator: opts.allocator ?? readOnlyAllocator(),
    logger,
    idempotency: opts.idempotency,
    redis: opts.redis,
  });
  opts.extend?.(app);
  await app.ready();
  const contract = await OpenApiContract.load(app);
  return {
    app,
    db,
    sql: db.sql,
    config,
    flags,
    contract,
    async request(injectOpts) {
      const res = await app.inject(injectOpts);
      contract.check(injectOpts.method ?? 'GET', String(injectOpts.url ?? injectOpts.path ?? '/'), res);
      return res;
    },
    async close() {
      flags.stop();
      await app.close();
      if (opts.sql) await opts.sql.end({ timeout: 1 });
      if (!opts.db) await db.drop();
    },
  };
}

/** Switch flags in the table and wait until this app's cache has seen the change. */
export async function switchFlags(t: TestApp, changes: Partial<FeatureFlags>): Promise<void> {
  await setFeatureFlags(t.sql, changes);
  await t.flags.refresh();
}

// ---------------------------------------------------------------------------------------------
// Contract: every response is checked against the generated OpenAPI document (OpenApiContract,
// shared with the system tests, lives in @quest/testing).
// ---------------------------------------------------------------------------------------------

export { OpenApiContract };

// ---------------------------------------------------------------------------------------------
// Rows, inserted with SQL: one copy for every suite, in @quest/testing (seed.ts), re-exported here
// so the API tests import everything they need from one place.
// ---------------------------------------------------------------------------------------------

export {
  createAccount,
  createApiKey,
  createCampaign,
  createOwner,
  createPayouts,
  createQuest,
  DAY,
  HOUR,
  randomAddress,
  revokeApiKey,
  type SeededOwner,
  type SeededPayout,
} from '@quest/testing';

export const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** A pool that can never connect: a port nothing listens on. */
export const UNREACHABLE_DATABASE_URL = 'postgres://postgres@127.0.0.1:1/unreachable';

/**
 * The OpenAPI document as GET /openapi.json serves it, from an app built without PostgreSQL or
 * Redis: generating the document queries nothing, so tests of the document alone need no database.
 */
export async function servedOpenApiDocument(): Promise<Record<string, unknown>> {
  const config = loadApiConfig({ DATABASE_URL: UNREACHABLE_DATABASE_URL, LOG_LEVEL: 'silent', METRICS_SAMPLE_MS: '0' });
  const sql = createSql(config.DATABASE_URL, { max: 1 });
  // Never consulted: no request but GET /openapi.json is made.
  const flags = { require: () => {}, isEnabled: () => true, stop: () => {} } as unknown as FeatureFlagCache;
  const app = await buildApp(config, { sql, flags, allocator: readOnlyAllocator() });
  try {
    const res = await app.inject({ method: 'GET', url: '/openapi.json' });
    if (res.statusCode !== 200) throw new Error(`GET /openapi.json answered ${res.statusCode}`);
    return res.json();
  } finally {
    await app.close();
    await sql.end({ timeout: 1 });
  }
}
