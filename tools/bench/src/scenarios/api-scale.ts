import type { Redis } from 'ioredis';
import { partitionOf } from '@quest/domain';
import { isClusterUrl, masterConnections, redisConnection } from '@quest/queue';
import { startRedis } from '@quest/testing/redis';
import { createNumberedAccounts } from '@quest/testing/seed';
import type { BaseCtx, ScenarioOutput, Verdict } from '../context.ts';
import { type LoadResult, runLoad } from '../http-load.ts';
import { type JobStats, jobStats } from '../jobs.ts';
import { measured } from '../measure.ts';
import { seedQuests } from '../seed.ts';
import { type Service, type ServiceEnv, startApi, startWorkerProcess, waitForPool } from '../services.ts';
import { type Row, rng } from '../stats.ts';
import { finish } from '../verify.ts';

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

interface OwnRedis {
  url: string;
  pid: number;
  stop(): Promise<void>;
}

/** A redis-server of its own (free port, temp dir, no persistence): its INFO counts this scenario alone. */
async function startOwnRedis(): Promise<OwnRedis> {
  const redis = await startRedis('none');
  return { url: redis.url, pid: redis.pid() ?? -1, stop: () => redis.stop() };
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

interface PointResult {
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

function roleCpu(cpu: Record<string, number>): Record<string, number> {
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

export async function apiScaleScenario(ctx: BaseCtx, o: ApiScaleOptions): Promise<ScenarioOutput> {
  const { infra, owner } = ctx;
  const accounts = await createNumberedAccounts(infra.sql, o.accountPool);
  // Its own redis-server (so INFO counts only this scenario), or the bench's own cluster (--redis-cluster).
  const own: OwnRedis = isClusterUrl(infra.redisUrl)
    ? { url: infra.redisUrl, pid: -1, stop: async () => {} }
    : await startOwnRedis();
  const redis = redisConnection(own.url, { maxRetriesPerRequest: 1 });
  redis.on('error', () => {});
  const points: PointResult[] = [];
  const verdicts: Verdict[] = [];
  ctx.log(`api-scale: own redis-server at ${own.url} (pid ${own.pid})`);
  try {
    for (const n of o.apiCounts) {
      for (let run = 1; run <= o.repeat; run++) {
        const label = `api-scale ${n} API${o.affinity ? ' (quest affinity)' : ''} run ${run}`;
        const prefix = `qrs_${n}_${run}_${Date.now().toString(36)}`;
        const env: ServiceEnv = {
          DATABASE_URL: infra.databaseUrl,
          REDIS_URL: own.url,
          QUEUE_PREFIX: prefix,
          QUEUE_PARTITIONS: String(o.partitions),
          LOG_LEVEL: 'warn',
        };
        // Small pools: PostgreSQL's connections are shared with everyone else on the machine. A
        // worker runs at most one job per partition it owns; the API's pool serves 202s and auth.
        const workerEnv = { ...env, DATABASE_POOL_MAX: String(Math.min(10, o.partitions + 2)) };
        const apiEnv = { ...env, DATABASE_POOL_MAX: '4' };
        const ids = Array.from({ length: o.workers }, (_, i) => `bench-a${n}r${run}w${i + 1}`);
        const workers = ids.map((id) => startWorkerProcess(workerEnv, id, o.profileArgs('worker')));
        let apis: (Service & { baseUrl: string })[] = [];
        try {
          await waitForPool(redis, prefix, o.partitions, ids, workers);
          apis = await Promise.all(
            Array.from({ length: n }, async (_, i) => {
              const api = await startApi(apiEnv, o.profileArgs('api'));
              api.name = `api${i + 1}`;
              return api;
            }),
          );
          const quests = await seedQuests(infra.sql, owner.ownerId, o.quests, label);
          const r = rng(100 * n + run);
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
          const send = (total: number) => {
            const amounts = shares.map((f) => Math.round(f * total));
            amounts[0]! += total - amounts.reduce((x, y) => x + y, 0);
            return Promise.all(
              apis.map((api, i) =>
                runLoad({
                  baseUrl: api.baseUrl,
                  apiKey: owner.apiKey,
                  connections: connections[i]!,
                  amount: amounts[i]!,
                  pick: pickFor(i),
                }),
              ),
            );
          };
          await send(Math.min(1000, o.allocations)); // warm-up, not measured
          const ownRedis = { pid: own.pid, name: 'redis (own)' } as Service;
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
          const sum = (f: (l: LoadResult) => number) => loads.reduce((a, l) => a + f(l), 0);
          const latencies = loads.map((l) => l.latency);
          const elapsedS = Math.max(...loads.map((l) => l.elapsedS));
          const byCommand = Object.entries(after.byCommand)
            .map(([k, v]) => [k, v - (before!.byCommand[k] ?? 0)] as [string, number])
            .filter(([, v]) => v > 0)
            .sort((a, b) => b[1] - a[1]);
          const point: PointResult = {
            apis: n,
            run,
            allocations: o.allocations,
            ok200: sum((l) => l.ok200),
            accepted202: sum((l) => l.accepted202),
            non2xx: sum((l) => Object.values(l.otherStatus).reduce((a, b) => a + b, 0)),
            errors: sum((l) => l.errors + l.timeouts),
            elapsedS,
            rate: sum((l) => l.ok200) / elapsedS,
            // The slowest process's percentiles: a conservative summary of the split load.
            p50: Math.max(...latencies.map((l) => l.p50 ?? 0)),
            p99: Math.max(...latencies.map((l) => l.p99 ?? 0)),
            redisCpuS: after.cpuS - before!.cpuS,
            redisCalls: after.calls - before!.calls,
            topCommands: byCommand.slice(0, 8),
            jobs,
            cpu,
          };
          points.push(point);
          const reasons: string[] = [];
          if (point.non2xx || point.errors) reasons.push(`${label}: ${point.non2xx} non-2xx, ${point.errors} errors/timeouts`);
          if (point.ok200 + point.accepted202 !== o.allocations)
            reasons.push(`${label}: ${point.ok200 + point.accepted202} of ${o.allocations} answered 200/202`);
          verdicts.push({ ok: reasons.length === 0, reasons });
          const per = roleCpu(cpu);
          ctx.log(
            `${label}: ${point.ok200} × 200, ${point.accepted202} × 202 in ${elapsedS.toFixed(1)} s; Redis ${point.redisCpuS.toFixed(2)} CPU-s ` +
              `(${Math.round((point.redisCpuS * 1e6) / o.allocations)} µs/alloc), ${point.redisCalls} commands; ` +
              `${(jobs.items / Math.max(1, jobs.jobs)).toFixed(2)} items/job; CPU µs/alloc: ${Object.entries(per)
                .map(([k, v]) => `${k} ${Math.round((v * 1e6) / o.allocations)}`)
                .join(', ')}`,
          );
        } finally {
          await Promise.all([...apis, ...workers].map((s) => s.stop('SIGTERM')));
          await Promise.all(masterConnections(redis).map((n) => n.flushall().catch(() => {})));
        }
      }
    }
  } finally {
    redis.disconnect();
    await own.stop();
  }

  const per10k = (p: PointResult) => (p.redisCpuS * 10_000) / p.allocations;
  const rows: Omit<Row, 'status' | 'scenario'>[] = [];
  const notes: string[] = [];
  for (const n of o.apiCounts) {
    const ps = points.filter((p) => p.apis === n);
    if (!ps.length) continue;
    const list = (f: (p: PointResult) => string) => ps.map(f).join(' / ');
    rows.push({
      metric: `Redis CPU-s per 10,000 allocations, ${n} API`,
      unit: 'text',
      service: list((p) => per10k(p).toFixed(2)),
    });
    rows.push({
      metric: `Redis commands per allocation, ${n} API`,
      unit: 'text',
      service: list((p) => (p.redisCalls / p.allocations).toFixed(1)),
    });
    rows.push({
      metric: `items per job, ${n} API`,
      unit: 'text',
      service: list((p) => (p.jobs.items / Math.max(1, p.jobs.jobs)).toFixed(2)),
    });
    rows.push({ metric: `allocations/s, ${n} API`, unit: 'text', service: list((p) => p.rate.toFixed(0)) });
    rows.push({ metric: `202s, ${n} API`, unit: 'text', service: list((p) => String(p.accepted202)) });
    for (const p of ps) {
      const per = roleCpu(p.cpu);
      notes.push(
        `api-scale ${n} API run ${p.run}: ${p.ok200} × 200, ${p.accepted202} × 202, ${p.rate.toFixed(0)}/s, p50 ${p.p50?.toFixed(1)} ms, p99 ${p.p99?.toFixed(1)} ms; ` +
          `Redis ${p.redisCpuS.toFixed(2)} CPU-s, ${p.redisCalls} commands (top: ${p.topCommands.map(([k, v]) => `${k} ${v}`).join(', ')}); ` +
          `${p.jobs.jobs} jobs, ${(p.jobs.items / Math.max(1, p.jobs.jobs)).toFixed(2)} items/job; CPU µs per allocation: ${Object.entries(
            per,
          )
            .map(([k, v]) => `${k} ${Math.round((v * 1e6) / p.allocations)}`)
            .join(', ')}; other processes ${(p.cpu['other processes (not this bench)'] ?? 0).toFixed(1)} CPU-s`,
      );
    }
  }
  return finish(ctx, 'api-scale', verdicts, rows, { points }, notes);
}
