import os from 'node:os';
import type { Sql } from '@quest/db';
import type { BaseCtx, Ctx } from './context.ts';
import {
  BENCH_DB_GROUP,
  benchDatabasePids,
  type CpuSnapshot,
  cpuDelta,
  cpuSnapshot,
  otherCpu,
  waitForQuiet,
} from './probes/cpu.ts';
import { ioDelta, ioSnapshot, redisCommandCounts } from './probes/io.ts';

/**
 * Run one measurement: first wait for the machine to be quiet (other people's builds on a shared
 * box), then account the CPU every process used during it, and note when other processes took
 * a noticeable share (the numbers are then disturbed, not representative).
 *
 * `warmUp`: run after the wait and before the accounting (not measured).
 *
 * `sampleEveryMs`: for runs whose processes exit before the end (a CLI run, its PostgreSQL
 * backends, parallel query workers), sample the CPU that often and keep each exited process's
 * last sample, so their work is not counted as other people's.
 */
export async function measured<T>(
  ctx: BaseCtx,
  label: string,
  fn: () => Promise<T>,
  opts: { sampleEveryMs?: number; warmUp?: () => Promise<unknown> } = {},
): Promise<{
  result: T;
  cpu: Record<string, number>;
  wallS: number;
  /** I/O system calls by role over the run (see ioSnapshot). */
  io: Record<string, { reads: number; writes: number }>;
  /** Commands Redis executed over the run (the whole server: the service and its background work). */
  redis: { commands: number; scripts: number } | undefined;
}> {
  // Same starting state for the service and its limit: the runs before left dead row versions
  // (quest and account updates) that would otherwise be pruned or vacuumed during this one.
  await ctx.infra.sql`vacuum (analyze) quests, accounts, payouts, allocation_rejections, batches`;
  // The obvious-queue peer's database too: each side starts from the same state.
  const peerSql = (ctx as Partial<Pick<Ctx, 'peer'>>).peer?.sql;
  if (peerSql) await peerSql`vacuum (analyze) quests, accounts, payouts`;
  const q = await waitForQuiet(Math.min(ctx.cfg.quick ? 10 : 90, ctx.quietBudget.remainingS));
  ctx.quietBudget.remainingS = Math.max(0, ctx.quietBudget.remainingS - q.waitedS);
  if (q.waitedS > 1.5)
    ctx.log(`${label}: waited ${q.waitedS.toFixed(0)} s for the machine to quieten (busy ${Math.round(q.busy * 100)}%)`);
  if (q.busy >= 0.2) ctx.disturbances.push(`${label}: machine ${Math.round(q.busy * 100)}% busy with other work before the run`);
  // After the wait, not before it: idle connections (the service's pools, the load's) may have
  // been closed while the machine quietened, and a steady client would not pay for opening them.
  await opts.warmUp?.();
  const services = ctx.services();
  const redisBefore = await redisCommandCounts(ctx.infra.redis);
  const ioBefore = ioSnapshot(services);
  const before = cpuSnapshot(services);
  const t0 = Date.now();
  const fromUs = Number(process.hrtime.bigint() / 1000n);
  const lastSeen: CpuSnapshot = new Map();
  // A process on its way out has an empty command line, so a late sample cannot tell a bench
  // database backend from a shared server process: once seen as a bench backend, it stays one.
  const remember = (snap: CpuSnapshot) => {
    for (const [pid, v] of snap) {
      const seen = lastSeen.get(pid);
      lastSeen.set(pid, seen?.group === BENCH_DB_GROUP ? { ...v, group: seen.group } : v);
    }
  };
  const sampler = opts.sampleEveryMs ? setInterval(() => remember(cpuSnapshot(services)), opts.sampleEveryMs) : undefined;
  let result: T;
  try {
    result = await fn();
  } finally {
    clearInterval(sampler);
  }
  ctx.windows.push({ label, fromUs, toUs: Number(process.hrtime.bigint() / 1000n) });
  const wallS = (Date.now() - t0) / 1000;
  let after = cpuSnapshot(services);
  const io = ioDelta(ioBefore, ioSnapshot(services));
  const redisAfter = await redisCommandCounts(ctx.infra.redis);
  const redis =
    redisBefore && redisAfter
      ? { commands: redisAfter.commands - redisBefore.commands, scripts: redisAfter.scripts - redisBefore.scripts }
      : undefined;
  if (sampler) {
    remember(after);
    after = new Map(lastSeen);
  }
  const cpu = cpuDelta(before, after, await backendLabels(ctx, benchDatabasePids(after)));
  const other = otherCpu(cpu);
  const share = other / (wallS * os.availableParallelism());
  // Sub-second runs (the admin audit) are not marked for a few tenths of a CPU-second: that much
  // is noise there (PostgreSQL's parallel query workers live too briefly to be sampled).
  if (share > 0.1 && other >= 0.5) {
    const msg = `${label}: other processes used ${other.toFixed(1)} CPU-s (${Math.round(share * 100)}% of the machine) during the run — disturbed`;
    ctx.disturbances.push(msg);
    ctx.log(`WARNING ${msg}`);
  }
  return { result, cpu, wallS, io, redis };
}

/** application_name prefix → whom a backend works for; the first that matches wins. */
const APPLICATIONS: readonly [prefix: string, who: string][] = [
  ['quest-api', 'API queries'],
  ['quest-worker', 'worker transactions'],
  ['quest-bench-reference', 'reference queries'],
  ['quest-bench-peer', 'peer transactions'],
  ['quest-bench-limit', 'limit transactions'],
  ['quest-bench', 'bench checks'],
];

/**
 * Who each bench-database backend works for (pg_stat_activity: application_name, backend type),
 * so PostgreSQL's CPU splits into API queries, worker transactions, limit transactions, the peers'
 * queries, autovacuum.
 */
async function backendLabels(ctx: BaseCtx, pids: string[]): Promise<Map<string, string>> {
  const labels = new Map<string, string>();
  if (!pids.length) return labels;
  const rows = await ctx.infra.sql<{ pid: number; application_name: string; backend_type: string }[]>`
    select pid, application_name, backend_type from pg_stat_activity where pid = any(${pids.map(Number)}::int[])`.catch(() => []);
  for (const r of rows) {
    const a = r.application_name;
    const who =
      r.backend_type === 'autovacuum worker'
        ? 'autovacuum'
        : (APPLICATIONS.find(([prefix]) => a.startsWith(prefix))?.[1] ?? (a || r.backend_type));
    labels.set(String(r.pid), `postgres: ${who}`);
  }
  return labels;
}

export async function withLimitPool<T>(ctx: Ctx, max: number, fn: (sql: Sql) => Promise<T>): Promise<T> {
  const sql = await ctx.openLimitPool(max);
  try {
    return await fn(sql);
  } finally {
    await ctx.closeLimitPool();
  }
}
