import type { Redis } from 'ioredis';
import { partitionOf } from '@quest/domain';
import { masterConnections } from '@quest/queue';
import type { BaseCtx, Verdict } from '../context.ts';
import { type LoadResult, runLoad } from '../http-load.ts';
import { type JobStats, jobStats } from '../jobs.ts';
import { measured } from '../measure.ts';
import { seedQuests } from '../seed.ts';
import { type Service, type ServiceEnv, startApi, startWorkerProcess, waitForPool } from '../services.ts';
import { rng } from '../stats.ts';

/** One point of api-scale: `n` API processes and `workers` workers on a fresh key prefix, one run of it. */

export interface PointResult {
  apis: number;
  run: number;
  allocations: number;
  ok200: number;
  accepted202: number;
  non2xx: number;
  errors: number;
  elapsedS: number;
  rate: number;
  p50: number | undefined;
  p99: number | undefined;
  redisCpuS: number;
  redisCalls: number;
  topCommands: [string, number][];
  jobs: JobStats;
  cpu: Record<string, number>;
}

/** The scenario's Redis: its URL, its server's pid (-1 when not ours to watch) and a connection to it. */
export interface PointRedis {
  url: string;
  pid: number;
  redis: Redis;
}

interface RedisCounters {
  cpuS: number;
  calls: number;
  /** calls per command name */
  byCommand: Record<string, number>;
}

/** CPU and commands of the Redis server, summed over the masters on a cluster. */
async function redisCounters(redis: Redis): Promise<RedisCounters> {
  const byCommand: Record<string, number> = {};
  let calls = 0;
  let cpuS = 0;
  for (const node of masterConnections(redis)) {
    const cpu = await node.info('cpu');
    const num = (k: string) => Number(new RegExp(`^${k}:([\\d.]+)`, 'm').exec(cpu)?.[1] ?? 0);
    cpuS += num('used_cpu_sys') + num('used_cpu_user');
    const stats = await node.info('commandstats');
    for (const m of stats.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
      byCommand[m[1]!] = (byCommand[m[1]!] ?? 0) + Number(m[2]);
      calls += Number(m[2]);
    }
  }
  return { cpuS, calls, byCommand };
}

/** Split `total` into `n` near-equal parts. */
const split = (total: number, n: number) => Array.from({ length: n }, (_, i) => Math.floor(total / n) + (i < total % n ? 1 : 0));

export function roleCpu(cpu: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {
    api: 0,
    workers: 0,
    'postgres (bench db)': 0,
    'postgres (shared: WAL)': 0,
    'redis (own)': 0,
  };
  for (const [k, v] of Object.entries(cpu)) {
    if (k.startsWith('api')) out.api! += v;
    else if (k.startsWith('bench-')) out.workers! += v;
    else if (k.startsWith('postgres: ') || k === 'postgres (bench database)') out['postgres (bench db)']! += v;
    else if (k.startsWith('postgres (shared')) out['postgres (shared: WAL)']! += v;
    else if (k === 'redis (own)') out['redis (own)']! += v;
  }
  return out;
}

/** The point's API processes and workers: the scenario's Redis, the point's key prefix. */
function pointEnvs(ctx: BaseCtx, o: ApiScaleOptions, redisUrl: string, prefix: string) {
  const env: ServiceEnv = {
    DATABASE_URL: ctx.infra.databaseUrl,
    REDIS_URL: redisUrl,
    QUEUE_PREFIX: prefix,
    QUEUE_PARTITIONS: String(o.partitions),
    LOG_LEVEL: 'warn',
  };
  // Small pools: PostgreSQL's connections are shared with everyone else on the machine. A
  // worker runs at most one job per partition it owns; the API's pool serves 202s and auth.
  const workerEnv = { ...env, DATABASE_POOL_MAX: String(Math.min(10, o.partitions + 2)) };
  const apiEnv = { ...env, DATABASE_POOL_MAX: '4' };
  return { workerEnv, apiEnv };
}

function startApis(apiEnv: ServiceEnv, o: ApiScaleOptions, n: number): Promise<(Service & { baseUrl: string })[]> {
  return Promise.all(
    Array.from({ length: n }, async (_, i) => {
      const api = await startApi(apiEnv, o.profileArgs('api'));
      api.name = `api${i + 1}`;
      return api;
    }),
  );
}

/** The point's quests, and a sender of `total` allocations over them split across the API processes. */
async function pointLoad(
  ctx: BaseCtx,
  o: ApiScaleOptions,
  apis: { baseUrl: string }[],
  accounts: string[],
  label: string,
  seed: number,
) {
  const n = apis.length;
  const quests = await seedQuests(ctx.infra.sql, ctx.owner.ownerId, o.quests, label);
  const r = rng(seed);
  // --affinity: API process i gets only the quests of partitions p ≡ i (mod n).
  const questsOf = (i: number) => (o.affinity ? quests.filter((q) => partitionOf(q, o.partitions) % n === i) : quests);
  const pickFor = (i: number) => {
    const own = questsOf(i);
    return () => ({
      questId: own[Math.floor(r() * own.length)]!,
      address: accounts[Math.floor(r() * accounts.length)]!,
    });
  };
  // Each process gets the share of the load its quests draw (even without affinity).
  const shares = apis.map((_, i) => questsOf(i).length / (o.affinity ? quests.length : n * quests.length));
  const connections = split(o.connections, n).map((c) => Math.max(1, c));
  return (total: number) => {
    const amounts = shares.map((f) => Math.round(f * total));
    amounts[0]! += total - amounts.reduce((x, y) => x + y, 0);
    return Promise.all(
      apis.map((api, i) =>
        runLoad({
          baseUrl: api.baseUrl,
          apiKey: ctx.owner.apiKey,
          connections: connections[i]!,
          amount: amounts[i]!,
          pick: pickFor(i),
        }),
      ),
    );
  };
}

/** The loads' answers, latencies and rate, and the Redis work between the two counter readings. */
function pointResult(
  at: { apis: number; run: number; allocations: number },
  loads: LoadResult[],
  redis: { before: RedisCounters; after: RedisCounters },
  jobs: JobStats,
  cpu: Record<string, number>,
): PointResult {
  const { before, after } = redis;
  const sum = (f: (l: LoadResult) => number) => loads.reduce((a, l) => a + f(l), 0);
  const latencies = loads.map((l) => l.latency);
  const elapsedS = Math.max(...loads.map((l) => l.elapsedS));
  const byCommand = Object.entries(after.byCommand)
    .map(([k, v]) => [k, v - (before.byCommand[k] ?? 0)] as [string, number])
    .filter(([, v]) => v > 0)
    .sort((a, b) => b[1] - a[1]);
  return {
    ...at,
    ok200: sum((l) => l.ok200),
    accepted202: sum((l) => l.accepted202),
    non2xx: sum((l) => Object.values(l.otherStatus).reduce((a, b) => a + b, 0)),
    errors: sum((l) => l.errors + l.timeouts),
    elapsedS,
    rate: sum((l) => l.ok200) / elapsedS,
    // The slowest process's percentiles: a conservative summary of the split load.
    p50: Math.max(...latencies.map((l) => l.p50 ?? 0)),
    p99: Math.max(...latencies.map((l) => l.p99 ?? 0)),
    redisCpuS: after.cpuS - before.cpuS,
    redisCalls: after.calls - before.calls,
    topCommands: byCommand.slice(0, 8),
    jobs,
    cpu,
  };
}

function logPoint(ctx: BaseCtx, label: string, point: PointResult, allocations: number): void {
  const per = roleCpu(point.cpu);
  ctx.log(
    `${label}: ${point.ok200} × 200, ${point.accepted202} × 202 in ${point.elapsedS.toFixed(1)} s; Redis ${point.redisCpuS.toFixed(2)} CPU-s ` +
      `(${Math.round((point.redisCpuS * 1e6) / allocations)} µs/alloc), ${point.redisCalls} commands; ` +
      `${(point.jobs.items / Math.max(1, point.jobs.jobs)).toFixed(2)} items/job; CPU µs/alloc: ${Object.entries(per)
        .map(([k, v]) => `${k} ${Math.round((v * 1e6) / allocations)}`)
        .join(', ')}`,
  );
}

/** Start the point's processes, warm them up, measure `o.allocations` allocations through them, stop them. */
export async function measurePoint(
  ctx: BaseCtx,
  o: ApiScaleOptions,
  on: PointRedis & { accounts: string[] },
  n: number,
  run: number,
): Promise<{ point: PointResult; verdict: Verdict }> {
  const { redis } = on;
  const label = `api-scale ${n} API${o.affinity ? ' (quest affinity)' : ''} run ${run}`;
  const prefix = `qrs_${n}_${run}_${Date.now().toString(36)}`;
  const { workerEnv, apiEnv } = pointEnvs(ctx, o, on.url, prefix);
  const ids = Array.from({ length: o.workers }, (_, i) => `bench-a${n}r${run}w${i + 1}`);
  const workers = ids.map((id) => startWorkerProcess(workerEnv, id, o.profileArgs('worker')));
  let apis: (Service & { baseUrl: string })[] = [];
  try {
    await waitForPool(redis, prefix, o.partitions, ids, workers);
    apis = await startApis(apiEnv, o, n);
    const send = await pointLoad(ctx, o, apis, on.accounts, label, 100 * n + run);
    await send(Math.min(1000, o.allocations)); // warm-up, not measured
    const ownRedis = { pid: on.pid, name: 'redis (own)' } as Service;
    const pctx: BaseCtx = { ...ctx, services: () => [...apis, ...workers, ownRedis] };
    let before: RedisCounters | undefined;
    let fromMs = 0;
    const { result: loads, cpu } = await measured(pctx, label, async () => {
      before = await redisCounters(redis);
      fromMs = Date.now();
      return send(o.allocations);
    });
    const toMs = Date.now();
    const after = await redisCounters(redis);
    const jobs = await jobStats(redis, prefix, o.partitions, fromMs, toMs + 1000);
    const point = pointResult({ apis: n, run, allocations: o.allocations }, loads, { before: before!, after }, jobs, cpu);
    const reasons: string[] = [];
    if (point.non2xx || point.errors) reasons.push(`${label}: ${point.non2xx} non-2xx, ${point.errors} errors/timeouts`);
    if (point.ok200 + point.accepted202 !== o.allocations)
      reasons.push(`${label}: ${point.ok200 + point.accepted202} of ${o.allocations} answered 200/202`);
    logPoint(ctx, label, point, o.allocations);
    return { point, verdict: { ok: reasons.length === 0, reasons } };
  } finally {
    await Promise.all([...apis, ...workers].map((s) => s.stop('SIGTERM')));
    await Promise.all(masterConnections(redis).map((n) => n.flushall().catch(() => {})));
  }
}

/**
 * api-scale: the same number of allocations sent through 1, 2, 4 … API processes (the load split
 * evenly over them), with the bench's workers behind, on a redis-server of its own (a free port, a
 * temp dir, no persistence), so Redis's CPU can be read exactly from its `INFO cpu` (used_cpu_sys +
 * used_cpu_user) and `INFO commandstats` — the shared Redis serves other people too. What it shows:
 * whether the Redis work per allocation grows with the number of API processes (it did while
 * every API process read every partition's event stream), and how coalescing (items per job)
 * changes when the same load is spread over more API processes. Each point starts fresh processes
 * and a fresh key prefix; `--repeat` runs each point again (the machine is shared: compare both).
 */

export interface ApiScaleOptions {
  apiCounts: number[];
  repeat: number;
  allocations: number;
  workers: number;
  partitions: number;
  connections: number;
  quests: number;
  accountPool: number;
  /**
   * Route by quest, as a load balancer hashing on the quest path would: API process i gets only
   * the quests of partitions p with p mod n = i, so each partition's requests meet in one process.
   */
  affinity: boolean;
  profileArgs: (role: 'api' | 'worker') => string[];
}
