import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { type Sql, setFeatureFlags, type FeatureFlags } from '@quest/db';
import { generateApiKey, hashApiKey, displayPrefix, newId, toChecksumAddress } from '@quest/domain';
import type { Allocator } from '@quest/queue';
import { createTestDatabase, OpenApiContract, type TestDatabase } from '@quest/testing';
import { buildApp } from '../src/app.ts';
import { type ApiConfig, loadApiConfig } from '../src/env.ts';
import { FeatureFlagCache } from '../src/flags.ts';
import { createLogger } from '../src/logger.ts';

// ---------------------------------------------------------------------------------------------
// The app under test: a fresh database per test file, the real app, and a checked `request`.
// ---------------------------------------------------------------------------------------------

/** An Allocator for read tests: reads never touch the queue; ping answers as told. */
export function readOnlyAllocator(ping: () => Promise<void> = async () => {}): Allocator {
  const unused = async (): Promise<never> => {
    throw new Error('the read API does not use the allocation queue');
  };
  return { allocate: unused, runBatch: unused, ping, close: async () => {} };
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
    FLAGS_REFRESH_MS: '100',
    ...opts.env,
  });
  const logger = createLogger(config.LOG_LEVEL, opts.logs);
  const flags = await FeatureFlagCache.start(db.sql, { refreshMs: config.FLAGS_REFRESH_MS, logger });
  const app = await buildApp(config, {
    sql: opts.sql ?? db.sql,
    flags,
    allocator: opts.allocator ?? readOnlyAllocator(),
    logger,
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
// Rows, inserted with SQL.
// ---------------------------------------------------------------------------------------------

export function randomAddress(): `0x${string}` {
  return toChecksumAddress(`0x${randomBytes(20).toString('hex')}`)!;
}

export interface SeededOwner {
  id: string;
  name: string;
  address: `0x${string}`;
  apiKey: string;
}

export async function createOwner(sql: Sql, fields: { name?: string; address?: `0x${string}` } = {}): Promise<SeededOwner> {
  const id = newId('own');
  const name = fields.name ?? `Owner ${id.slice(-6)}`;
  const address = fields.address ?? randomAddress();
  await sql`insert into owners (id, name, pass_address) values (${id}, ${name}, ${address})`;
  const apiKey = await createApiKey(sql, id);
  return { id, name, address, apiKey };
}

export async function createApiKey(sql: Sql, ownerId: string, opts: { revoked?: boolean } = {}): Promise<string> {
  const key = generateApiKey();
  await sql`
    insert into api_keys (id, owner_id, key_hash, prefix, revoked_at)
    values (${newId('key')}, ${ownerId}, ${hashApiKey(key)}, ${displayPrefix(key)}, ${opts.revoked ? new Date() : null})`;
  return key;
}

export async function revokeApiKey(sql: Sql, key: string): Promise<void> {
  await sql`update api_keys set revoked_at = now() where key_hash = ${hashApiKey(key)}`;
}

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

export interface CampaignFields {
  name?: string;
  description?: string;
  startAt?: Date;
  endAt?: Date;
  isActive?: boolean;
  externalAppId?: string | null;
}

export async function createCampaign(sql: Sql, f: CampaignFields = {}): Promise<number> {
  const [row] = await sql<{ id: number }[]>`
    insert into campaigns (name, description, start_at, end_at, is_active, external_app_id)
    values (${f.name ?? 'Campaign'}, ${f.description ?? 'A campaign'}, ${f.startAt ?? new Date(Date.now() - DAY)},
            ${f.endAt ?? new Date(Date.now() + 30 * DAY)}, ${f.isActive ?? true}, ${f.externalAppId ?? null})
    returning id`;
  return row!.id;
}

export interface QuestFields {
  ownerId: string;
  campaignId?: number | null;
  name?: string;
  description?: string;
  startAt?: Date;
  endAt?: Date;
  isPublic?: boolean;
  actionStatus?: 'active' | 'deactivated';
  totalPoints?: number;
  pointsRemaining?: number;
  expectedPointsPerCompletion?: number;
}

export async function createQuest(sql: Sql, f: QuestFields): Promise<number> {
  const total = f.totalPoints ?? 1000;
  const [row] = await sql<{ id: number }[]>`
    insert into quests (owner_id, campaign_id, name, description, start_at, end_at, is_public, action_status,
                        total_points, points_remaining, expected_points_per_completion)
    values (${f.ownerId}, ${f.campaignId ?? null}, ${f.name ?? 'Quest'}, ${f.description ?? 'Do the thing'},
            ${f.startAt ?? new Date(Date.now() - HOUR)}, ${f.endAt ?? new Date(Date.now() + DAY)}, ${f.isPublic ?? true},
            ${f.actionStatus ?? 'active'}, ${total}, ${f.pointsRemaining ?? total}, ${f.expectedPointsPerCompletion ?? 10})
    returning id`;
  return row!.id;
}

export async function createAccount(
  sql: Sql,
  address: `0x${string}` = randomAddress(),
): Promise<{ id: number; address: string }> {
  const [row] = await sql<{ id: number }[]>`insert into accounts (pass_address) values (${address}) returning id`;
  return { id: row!.id, address };
}

export interface SeededPayout {
  id: string;
  amount: number;
  createdAt: Date;
  pass: string;
}

/**
 * Credit `amounts` to the account in this order (so the last one is the newest), keeping the
 * ledger consistent: the quest's budget and the account's balance move with each payout.
 */
export async function createPayouts(
  sql: Sql,
  questId: number,
  account: { id: number; address: string },
  amounts: number[],
  createdAt: (index: number) => Date = (i) => new Date(Date.UTC(2025, 0, 1) + i * 1000),
): Promise<SeededPayout[]> {
  const payouts: SeededPayout[] = [];
  for (const [i, amount] of amounts.entries()) {
    const id = newId('pay');
    const at = createdAt(i);
    await sql`
      insert into payouts (id, quest_id, account_id, amount, request_key, created_at)
      values (${id}, ${questId}, ${account.id}, ${amount}, ${newId('alc')}, ${at})`;
    payouts.push({ id, amount, createdAt: at, pass: account.address });
  }
  const total = amounts.reduce((a, b) => a + b, 0);
  await sql`update quests set points_remaining = points_remaining - ${total} where id = ${questId}`;
  await sql`update accounts set balance = balance + ${total} where id = ${account.id}`;
  return payouts;
}

export const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** A pool that can never connect: a port nothing listens on. */
export const UNREACHABLE_DATABASE_URL = 'postgres://postgres@127.0.0.1:1/unreachable';

export { DAY, HOUR };
