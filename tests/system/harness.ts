import { Queue } from 'bullmq';
import { generateApiKey, hashApiKey, toChecksumAddress } from '@quest/domain';
import { partitionQueueName } from '@quest/queue';
import {
  createTestDatabase,
  createTestRedis,
  OpenApiContract,
  type ServiceProcess,
  startProcess,
  startWorker,
  type TestDatabase,
  type TestRedis,
} from '@quest/testing';

/**
 * A whole running service for system tests: its own database and Redis prefix, the real API
 * process and N real worker processes, talking over loopback HTTP. Nothing is mocked.
 */
export interface System {
  db: TestDatabase;
  redis: TestRedis;
  baseUrl: string;
  api: ServiceProcess;
  /** Every response the helpers below receive is checked against the server's own OpenAPI document. */
  contract: OpenApiContract;
  workers: ServiceProcess[];
  env: Record<string, string>;
  startWorker(extra?: Record<string, string>): Promise<ServiceProcess>;
  startApi(extra?: Record<string, string>): Promise<void>;
  stop(): Promise<void>;
}

/** The n-th test address, in the EIP-55 form the service stores and answers. */
export const address = (n: number) => toChecksumAddress(`0x${n.toString(16).padStart(40, '0')}`)!;

export async function startSystem(opts: { workers: number; partitions?: number; env?: Record<string, string> }): Promise<System> {
  const [db, redis] = await Promise.all([createTestDatabase(), createTestRedis()]);
  const env: Record<string, string> = {
    DATABASE_URL: db.url,
    REDIS_URL: redis.url,
    QUEUE_PREFIX: redis.prefix,
    QUEUE_PARTITIONS: String(opts.partitions ?? 8),
    LOG_LEVEL: 'info',
    // Small pools: test files may run side by side under PostgreSQL's default 100 connections.
    DATABASE_POOL_MAX: '4',
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
      const api = await startProcess(
        'apps/api/src/server.ts',
        { ...env, PORT: '0', ...extra },
        /Server listening at http:\/\/127\.0\.0\.1:\d+/,
      );
      system.api = api;
      system.baseUrl = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(api.output())![1]!;
      system.contract = OpenApiContract.fromDocument(await (await fetch(`${system.baseUrl}/openapi.json`)).json());
    },
    async stop() {
      await Promise.all([system.api?.stop('SIGKILL'), ...system.workers.map((w) => w.stop('SIGKILL'))]);
      await redis.cleanup();
      await db.drop();
    },
  };
  await system.startApi();
  await Promise.all(Array.from({ length: opts.workers }, () => system.startWorker()));
  return system;
}

/** Seed an owner with an API key, plus quests and accounts, straight into the database. */
export async function seed(
  system: System,
  opts: { quests?: number; total?: number; accounts?: number; start?: Date; end?: Date } = {},
): Promise<{ ownerId: string; apiKey: string; questIds: number[]; accounts: string[] }> {
  const { sql } = system.db;
  const ownerId = `own_${Math.random().toString(36).slice(2, 12)}`;
  const apiKey = generateApiKey();
  const ownerPass = address(0xf000_0000 + Math.floor(Math.random() * 0xfff_ffff));
  await sql`insert into owners (id, name, pass_address) values (${ownerId}, 'Owner', ${ownerPass})`;
  await sql`insert into api_keys (id, owner_id, key_hash, prefix) values (${`key_${ownerId}`}, ${ownerId}, ${hashApiKey(apiKey)}, ${apiKey.slice(0, 7)})`;
  const rows = await sql<{ id: number }[]>`
    insert into quests (owner_id, name, description, start_at, end_at, total_points, points_remaining)
    select ${ownerId}, 'Quest ' || n, 'd', ${opts.start ?? new Date(Date.now() - 3_600_000)}, ${opts.end ?? new Date(Date.now() + 86_400_000)},
           ${opts.total ?? 1_000_000}, ${opts.total ?? 1_000_000}
    from generate_series(1, ${opts.quests ?? 1}) n returning id`;
  const count = opts.accounts ?? 100;
  const accounts = Array.from({ length: count }, (_, i) => address(i + 1));
  await sql`insert into accounts (pass_address) select * from unnest(${accounts}::text[]) on conflict do nothing`;
  return { ownerId, apiKey, questIds: rows.map((r) => r.id), accounts };
}

/** Send a request and check the answer against the OpenAPI document before handing it back. */
async function send(system: System, method: 'GET' | 'POST', path: string, init: RequestInit) {
  const res = await fetch(system.baseUrl + path, { ...init, method });
  const text = await res.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = text;
  }
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

/** The ledger invariants of the audit, checked directly. */
export async function auditViolations(system: System): Promise<{ kind: string; id: string }[]> {
  const { sql } = system.db;
  return sql<{ kind: string; id: string }[]>`
    select 'quest' as kind, q.id::text as id from quests q
      left join (select quest_id, sum(amount) s from payouts group by 1) p on p.quest_id = q.id
      where q.total_points <> q.points_remaining + coalesce(p.s, 0) or q.points_remaining < 0
    union all
    select 'account', a.id::text from accounts a
      left join (select account_id, sum(amount) s from payouts group by 1) p on p.account_id = a.id
      where a.balance <> coalesce(p.s, 0) or a.balance < 0`.then((rows) => [...rows]);
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
