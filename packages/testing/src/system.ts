import { UNTHROTTLED_RATE_LIMITS } from './limits.ts';
import { Queue } from 'bullmq';
import { partitionQueueName } from '@quest/queue';
import { expect, vi } from 'vitest';
import { createTestDatabase, createTestRedis, type TestDatabase, type TestRedis } from './servers.ts';
import { OpenApiContract } from './openapi.ts';
import { type ServiceProcess, startApiProcess, startWorker } from './processes.ts';
import { createAccounts, createOwner, createQuests, type SeededOwner } from './seed.ts';
import { Redis } from 'ioredis';
import { poolUnsettled } from './workers.ts';
import { jsonOrText } from './http.ts';

/**
 * A whole running service for system tests: its own database and Redis prefix, the real API
 * process and N real worker processes, talking over loopback HTTP. Nothing is mocked.
 */
export interface System {
  db: TestDatabase;
  redis: TestRedis;
  baseUrl: string;
  api: ServiceProcess;
  /** Every response `post`/`get` receive is checked against the server's own OpenAPI document. */
  contract: OpenApiContract;
  workers: ServiceProcess[];
  env: Record<string, string>;
  startWorker(extra?: Record<string, string>): Promise<ServiceProcess>;
  startApi(extra?: Record<string, string>): Promise<void>;
  stop(): Promise<void>;
}

export interface SystemOptions {
  workers: number;
  partitions?: number;
  env?: Record<string, string>;
  /** Use these instead of creating a database and a Redis prefix of its own (the caller drops them). */
  db?: TestDatabase;
  redis?: TestRedis;
}

export async function startSystem(opts: SystemOptions): Promise<System> {
  const [db, redis] = await Promise.all([opts.db ?? createTestDatabase(), opts.redis ?? createTestRedis()]);
  const env: Record<string, string> = {
    DATABASE_URL: db.url,
    REDIS_URL: redis.url,
    QUEUE_PREFIX: redis.prefix,
    QUEUE_PARTITIONS: String(opts.partitions ?? 8),
    LOG_LEVEL: 'info',
    // Small pools: test files may run side by side under PostgreSQL's default 100 connections.
    DATABASE_POOL_MAX: '4',
    ...UNTHROTTLED_RATE_LIMITS,
    ...opts.env,
  };
  const system: System = {
    db,
    redis,
    env,
    baseUrl: '',
    api: undefined as unknown as ServiceProcess,
    contract: undefined as unknown as OpenApiContract,
    workers: [],
    async startWorker(extra = {}) {
      const w = await startWorker({ ...env, ...extra });
      system.workers.push(w);
      return w;
    },
    async startApi(extra = {}) {
      const { process, baseUrl } = await startApiProcess({ ...env, ...extra });
      system.api = process;
      system.baseUrl = baseUrl;
      system.contract = OpenApiContract.fromDocument(await (await fetch(`${baseUrl}/openapi.json`)).json());
    },
    async stop() {
      await Promise.all([system.api?.stop('SIGKILL'), ...system.workers.map((w) => w.stop('SIGKILL'))]);
      if (!opts.redis) await redis.cleanup();
      if (!opts.db) await db.drop();
    },
  };
  await system.startApi();
  await Promise.all(Array.from({ length: opts.workers }, () => system.startWorker()));
  if (opts.workers > 1) await waitForPool(system);
  return system;
}

/** Live worker processes of the system (started and not exited). */
export const liveWorkers = (system: System) =>
  system.workers.filter((w) => w.child.exitCode === null && w.child.signalCode === null);

/**
 * Wait until the pool has settled on exactly the live worker processes: the membership set in Redis
 * holds `members` entries (default: every live worker) and each live worker has rebalanced for that
 * many members, so partitions are spread and no partition is owned twice over.
 */
export async function waitForPool(system: System, members = liveWorkers(system).length, timeout = 30_000): Promise<void> {
  const redis = new Redis(system.redis.url, { maxRetriesPerRequest: 1 });
  try {
    await vi.waitFor(
      async () => expect(await poolUnsettled(redis, system.redis.prefix, liveWorkers(system), members)).toBeUndefined(),
      { timeout, interval: 50 },
    );
  } finally {
    redis.disconnect();
  }
}

/** Seed an owner with an API key, plus quests and accounts, straight into the database. */
export async function seed(
  system: System,
  opts: { quests?: number; total?: number; accounts?: number; start?: Date; end?: Date } = {},
): Promise<{ ownerId: string; apiKey: string; owner: SeededOwner; questIds: number[]; accounts: `0x${string}`[] }> {
  const { sql } = system.db;
  const owner = await createOwner(sql);
  const questIds = await createQuests(sql, opts.quests ?? 1, {
    ownerId: owner.id,
    totalPoints: opts.total ?? 1_000_000,
    ...(opts.start ? { startAt: opts.start } : {}),
    ...(opts.end ? { endAt: opts.end } : {}),
  });
  const accounts = await createAccounts(sql, opts.accounts ?? 100);
  return { ownerId: owner.id, apiKey: owner.apiKey, owner, questIds, accounts };
}

export interface SystemResponse {
  status: number;
  body: any;
  headers: Headers;
}

/** Send a request and check the answer against the OpenAPI document before handing it back. */
async function send(system: System, method: 'GET' | 'POST', path: string, init: RequestInit): Promise<SystemResponse> {
  const res = await fetch(system.baseUrl + path, { ...init, method });
  const text = await res.text();
  const json: any = jsonOrText(text);
  system.contract.check(method, path, {
    statusCode: res.status,
    headers: Object.fromEntries(res.headers),
    body: text,
    json: () => JSON.parse(text),
  });
  return { status: res.status, body: json, headers: res.headers };
}

export function post(system: System, path: string, body: unknown, headers: Record<string, string> = {}) {
  return send(system, 'POST', path, {
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

export function get(system: System, path: string, headers: Record<string, string> = {}) {
  return send(system, 'GET', path, { headers });
}

/**
 * Follow a 202's status URL until the allocation (or batch) is no longer pending, and hand back the
 * final body. Polls; the bound is generous and only there so a broken pipeline fails instead of hanging.
 */
export async function settle(system: System, location: string, apiKey: string, timeout = 30_000): Promise<any> {
  let last: any;
  await vi.waitFor(
    async () => {
      const res = await get(system, location, { 'x-api-key': apiKey });
      expect(res.status).toBe(200);
      last = res.body;
      const state = (last.allocation ?? last.batch ?? last.reversal).status;
      expect(state, `${location} still pending`).not.toMatch(/^(pending|processing)$/);
    },
    { timeout, interval: 50 },
  );
  return last;
}

/** Every completed job of every partition, with who processed it. */
export async function completedJobs(system: System) {
  const partitions = Number(system.env.QUEUE_PARTITIONS);
  const jobs: { partition: number; id: number; processedBy?: string; keys: string[]; batchId?: string }[] = [];
  for (let p = 0; p < partitions; p++) {
    const q = new Queue(partitionQueueName(p), { connection: { url: system.redis.url } as never, prefix: system.redis.prefix });
    for (const job of await q.getJobs(['completed'], 0, -1)) {
      const keys: string[] = job.name === 'allocate' ? job.data.items.map((i: { key: string }) => i.key) : [];
      const batchId: string | undefined = job.name === 'batch' ? job.data.batchId : undefined;
      jobs.push({ partition: p, id: Number(job.id), processedBy: job.processedBy, keys, batchId });
    }
    await q.close();
  }
  return jobs;
}

/** How many jobs were ever added to the system's partition queues (the sum of BullMQ's per-queue id counters). */
export async function jobsAdded(system: System): Promise<number> {
  const partitions = Number(system.env.QUEUE_PARTITIONS);
  const redis = new Redis(system.redis.url, { maxRetriesPerRequest: 1 });
  try {
    const keys = Array.from({ length: partitions }, (_, p) => `${system.redis.prefix}:${partitionQueueName(p)}:id`);
    return (await redis.mget(keys)).reduce((sum, n) => sum + Number(n ?? 0), 0);
  } finally {
    redis.disconnect();
  }
}

/** Jobs of the system's partition queues not decided yet (waiting, active, delayed, prioritized or waiting for children). */
export async function unfinishedJobs(system: System): Promise<number> {
  const partitions = Number(system.env.QUEUE_PARTITIONS);
  let n = 0;
  for (let p = 0; p < partitions; p++) {
    const q = new Queue(partitionQueueName(p), { connection: { url: system.redis.url } as never, prefix: system.redis.prefix });
    try {
      n += await q.getJobCountByTypes('wait', 'active', 'delayed', 'prioritized', 'waiting-children');
    } finally {
      await q.close();
    }
  }
  return n;
}
