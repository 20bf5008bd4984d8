import type { Redis } from 'ioredis';
import type { Sql } from '@quest/db';
import { partitionQueueName } from '@quest/queue';
import { type AuditResult, auditLedger, type CreditCheck, checkCredits, waitForDrain } from './audit.ts';
import { type BatchHttpResult, runBatchesHttp } from './batch-http.ts';
import { type CreditCliResult, runCreditCli } from './credit-cli.ts';
import { type DirectResult, directBatches, directCoalesced, directSingle } from './direct.ts';
import { type LoadResult, runLoad } from './http-load.ts';
import type { BenchInfra } from './infra.ts';
import {
  BENCH_DB_GROUP,
  benchDatabasePids,
  type CpuSnapshot,
  cpuDelta,
  cpuSnapshot,
  ioDelta,
  ioSnapshot,
  redisCommandCounts,
  otherCpu,
  type Service,
  sampleRss,
  waitForQuiet,
} from './procs.ts';
import os from 'node:os';
import type { Window } from './profile.ts';
import { type Owner, seedQuests } from './seed.ts';
import { formatValue, groupThousands, type Row, rng } from './stats.ts';

export const SCENARIOS = ['latency', 'throughput', 'hot', 'batch', 'scale', 'memory', 'api-scale', 'admin'] as const;
export type ScenarioName = (typeof SCENARIOS)[number];

export interface BenchConfig {
  quick: boolean;
  workers: number;
  partitions: number;
  connections: number;
  latencyRequests: number;
  throughputS: number;
  hotS: number;
  /** Duration of the single-item limit runs (throughput, hot). */
  limitS: number;
  /** Duration of the coalesced-lists limit runs. */
  coalescedS: number;
  throughputQuests: number;
  accountPool: number;
  batchItems: number;
  batchSize: number;
  batchConcurrency: number;
  chunkSize: number;
  scaleWorkers: number[];
  warmupS: number;
  /** admin: rows of the `quest-admin account import` file (and of the in-process importAccounts limit). */
  importRows: number;
  /** admin: payouts written before `quest-admin audit` is measured. */
  auditPayouts: number;
}

export function benchConfig(quick: boolean, overrides: Partial<BenchConfig> = {}): BenchConfig {
  const base: BenchConfig = quick
    ? {
        quick,
        workers: 2,
        partitions: 16,
        connections: 64,
        latencyRequests: 500,
        throughputS: 5,
        hotS: 5,
        limitS: 5,
        coalescedS: 3,
        throughputQuests: 1000,
        accountPool: 10_000,
        batchItems: 20_000,
        batchSize: 5_000,
        batchConcurrency: 4,
        chunkSize: 5000, // replaced by the worker's own default (main.ts)
        scaleWorkers: [1, 2],
        warmupS: 1,
        importRows: 100_000,
        auditPayouts: 1_000_000,
      }
    : {
        quick,
        workers: 2,
        partitions: 16,
        connections: 64,
        latencyRequests: 2000,
        throughputS: 20,
        hotS: 20,
        limitS: 20,
        coalescedS: 10,
        throughputQuests: 1000,
        accountPool: 10_000,
        batchItems: 100_000,
        batchSize: 10_000,
        batchConcurrency: 4,
        chunkSize: 5000, // replaced by the worker's own default (main.ts)
        scaleWorkers: [1, 2, 4],
        warmupS: 3,
        importRows: 100_000,
        auditPayouts: 1_000_000,
      };
  return { ...base, ...overrides };
}

/**
 * What every scenario gets, also when the service is not running (admin measures the CLI against
 * the database alone): the bench database, logging and the measuring state.
 */
export interface BaseCtx {
  cfg: BenchConfig;
  infra: BenchInfra;
  owner: Owner;
  /** The service's processes now running (none when only service-less scenarios were selected). */
  services(): Service[];
  log(msg: string): void;
  /** Machine-disturbance notes collected by measured(). */
  disturbances: string[];
  /** Measured windows (CLOCK_MONOTONIC µs), to cut CPU profiles down to what was measured. */
  windows: Window[];
  /** Seconds left for waiting on a quiet machine over the whole run (keeps --quick under 2 minutes). */
  quietBudget: { remainingS: number };
}

export interface Ctx extends BaseCtx {
  /** Checksummed addresses of the seeded accounts (≥ max(accountPool, batchItems)). */
  accounts: string[];
  api: Service & { baseUrl: string };
  /**
   * The reference service (reference-server.ts): what a user would write instead — a plain
   * Fastify + postgres.js service running the same ledger transaction inline. Measured under the
   * same load as the service in latency, throughput and hot.
   */
  reference?: Service & { baseUrl: string };
  workers(): Service[];
  restartWorkers(n: number): Promise<void>;
  /**
   * A fresh pool of exactly `max` connections for a limit run, all opened before it returns (so
   * connection set-up is not measured, and a server shared with other users' tests cannot refuse
   * connections mid-run); closed again by closeLimitPool(). Opened and closed per run so the
   * bench does not sit on PostgreSQL connections the service needs.
   */
  openLimitPool(max: number): Promise<Sql>;
  closeLimitPool(): Promise<void>;
  /** Measurements shared between scenarios (e.g. the throughput limit reused by scale). */
  shared: { throughputLimit?: DirectResult };
}

export interface ScenarioOutput {
  name: ScenarioName;
  ok: boolean;
  rows: Row[];
  raw: Record<string, unknown>;
  notes: string[];
}

export interface Verdict {
  ok: boolean;
  reasons: string[];
  /** The exact payout check, for scenarios that credit through the service. */
  credits?: CreditCheck;
}

/**
 * Run one measurement: first wait for the machine to be quiet (other people's builds on a shared
 * box), then account the CPU every process used during it, and note when other processes took
 * a noticeable share (the numbers are then disturbed, not representative).
 *
 * `sampleEveryMs`: for runs whose processes exit before the end (a CLI run, its PostgreSQL
 * backends, parallel query workers), sample the CPU that often and keep each exited process's
 * last sample, so their work is not counted as other people's.
 */
export async function measured<T>(
  ctx: BaseCtx,
  label: string,
  fn: () => Promise<T>,
  opts: { sampleEveryMs?: number } = {},
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
  const q = await waitForQuiet(Math.min(ctx.cfg.quick ? 10 : 90, ctx.quietBudget.remainingS));
  ctx.quietBudget.remainingS = Math.max(0, ctx.quietBudget.remainingS - q.waitedS);
  if (q.waitedS > 1.5)
    ctx.log(`${label}: waited ${q.waitedS.toFixed(0)} s for the machine to quieten (busy ${Math.round(q.busy * 100)}%)`);
  if (q.busy >= 0.2) ctx.disturbances.push(`${label}: machine ${Math.round(q.busy * 100)}% busy with other work before the run`);
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

/**
 * Who each bench-database backend works for (pg_stat_activity: application_name, backend type),
 * so PostgreSQL's CPU splits into API queries, worker transactions, limit transactions, autovacuum.
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
        : a.startsWith('quest-api')
          ? 'API queries'
          : a.startsWith('quest-worker')
            ? 'worker transactions'
            : a.startsWith('quest-bench-reference')
              ? 'reference queries'
              : a.startsWith('quest-bench-limit')
                ? 'limit transactions'
                : a.startsWith('quest-bench')
                  ? 'bench checks'
                  : a || r.backend_type;
    labels.set(String(r.pid), `postgres: ${who}`);
  }
  return labels;
}

async function withLimitPool<T>(ctx: Ctx, max: number, fn: (sql: Sql) => Promise<T>): Promise<T> {
  const sql = await ctx.openLimitPool(max);
  try {
    return await fn(sql);
  } finally {
    await ctx.closeLimitPool();
  }
}

function sumValues(o: Record<string, number>): number {
  return Object.values(o).reduce((a, b) => a + b, 0);
}

async function verifyLoad(ctx: Ctx, questIds: number[], load: LoadResult): Promise<Verdict> {
  const reasons: string[] = [];
  if (load.accepted202 > 0) {
    const drained = await waitForDrain(ctx.infra.redis, ctx.infra.prefix, ctx.cfg.partitions, 60_000);
    if (!drained) reasons.push('queues did not drain within 60 s');
  }
  const inFlightAtStop = Math.max(0, load.sent - load.received);
  const credits = await checkCredits(ctx.infra.sql, questIds, load.payoutIds, inFlightAtStop + load.accepted202);
  const non2xx = sumValues(load.otherStatus);
  if (non2xx) reasons.push(`${non2xx} non-2xx (${JSON.stringify(load.otherStatus)})`);
  if (load.errors || load.timeouts) reasons.push(`${load.errors} connection errors, ${load.timeouts} timeouts`);
  if (credits.lost) reasons.push(`${credits.lost} acknowledged payouts missing`);
  if (credits.repeatedIds) reasons.push(`${credits.repeatedIds} payout ids handed out twice`);
  if (credits.unacknowledged > credits.unacknowledgedAllowed)
    reasons.push(`${credits.unacknowledged} unacknowledged payouts (> ${credits.unacknowledgedAllowed} in flight)`);
  if (credits.rejections) reasons.push(`${credits.rejections} rejections`);
  if (load.sampleErrors.length) reasons.push(`e.g. ${load.sampleErrors[0]}`);
  return { ok: reasons.length === 0, reasons, credits };
}

async function verifyDirect(ctx: Ctx, questIds: number[], d: DirectResult): Promise<Verdict> {
  const reasons: string[] = [];
  const credits = await checkCredits(ctx.infra.sql, questIds, d.payoutIds, 0);
  if (d.errors) reasons.push(`limit: ${d.errors} errors (${d.sampleErrors[0] ?? ''})`);
  if (d.notCompleted) reasons.push(`limit: ${d.notCompleted} items not completed`);
  if (!credits.ok) reasons.push(`limit: credits mismatch ${JSON.stringify({ ...credits, ok: undefined })}`);
  return { ok: reasons.length === 0, reasons, credits };
}

/** The CLI run: exit 0, every row newly credited once, the quest's payouts exactly those rows. */
async function verifyCreditCli(ctx: Ctx, questId: number, rows: number, r: CreditCliResult): Promise<Verdict> {
  const reasons: string[] = [];
  if (r.code !== 0) reasons.push(`quest-admin credit exited ${r.code}: ${r.stderr.slice(0, 300)}`);
  const s = r.summary;
  if (s?.total !== rows || s.credited !== rows || s.failed !== 0 || s.replayed !== 0)
    reasons.push(`quest-admin credit summary ${JSON.stringify(s)}; expected ${rows} rows newly credited`);
  const [{ n, paid } = { n: 0, paid: 0 }] = await ctx.infra.sql<{ n: number; paid: number }[]>`
    select count(*)::int as n, count(distinct account_id)::int as paid from payouts where quest_id = ${questId}`;
  if (n !== rows || paid !== rows) reasons.push(`quest-admin credit: ${n} payouts to ${paid} accounts, expected ${rows}`);
  return { ok: reasons.length === 0, reasons };
}

async function verifyBatch(ctx: Ctx, questId: number, b: BatchHttpResult): Promise<Verdict> {
  const reasons: string[] = [];
  const credits = await checkCredits(ctx.infra.sql, [questId], b.payoutIds, 0);
  const non2xx = sumValues(b.otherStatus);
  if (non2xx) reasons.push(`${non2xx} non-2xx (${b.sampleErrors[0] ?? ''})`);
  if (b.failedBatches) reasons.push(`${b.failedBatches} batches not completed`);
  if (b.failed) reasons.push(`${b.failed} items rejected`);
  if (b.succeeded !== b.items) reasons.push(`${b.succeeded} of ${b.items} items credited`);
  if (!credits.ok) reasons.push(`credits mismatch ${JSON.stringify({ ...credits, ok: undefined })}`);
  return { ok: reasons.length === 0, reasons, credits };
}

export async function finish(
  ctx: BaseCtx,
  name: ScenarioName,
  verdicts: Verdict[],
  rows: Omit<Row, 'status' | 'scenario'>[],
  raw: Record<string, unknown>,
  notes: string[] = [],
): Promise<ScenarioOutput> {
  const audit: AuditResult = await auditLedger(ctx.infra.sql);
  const reasons = verdicts.flatMap((v) => v.reasons);
  if (audit.invariantViolations) reasons.push(`${audit.invariantViolations} ledger invariant violations`);
  if (audit.duplicateKeys) reasons.push(`${audit.duplicateKeys} doubled request keys`);
  const ok = reasons.length === 0;
  const status = ok ? 'PASS' : 'FAILED';
  for (const r of reasons) notes.push(`FAILED: ${r}`);
  return {
    name,
    ok,
    rows: rows.map((r) => ({ ...r, scenario: name, status })),
    raw: { ...raw, audit, credits: verdicts.flatMap((v) => (v.credits ? [v.credits] : [])) },
    notes,
  };
}

/** Strip the id lists (kept only for the checks) from what goes into the JSON file. */
function lean<T extends { payoutIds: string[] }>(r: T): Omit<T, 'payoutIds'> & { payoutIdCount: number } {
  const { payoutIds, ...rest } = r;
  return { ...rest, payoutIdCount: payoutIds.length };
}

// ───────────────────────────── 1. latency ─────────────────────────────

export async function latencyScenario(ctx: Ctx): Promise<ScenarioOutput> {
  const { cfg, infra, owner } = ctx;
  const n = cfg.latencyRequests;
  const [svcQuest] = await seedQuests(infra.sql, owner.ownerId, 1, 'latency');
  const r = rng(1);
  const pickAccount = () => ctx.accounts[Math.floor(r() * cfg.accountPool)]!;
  ctx.log(`latency: ${n} sequential POSTs, 1 connection`);
  const {
    result: load,
    cpu: svcCpu,
    io: svcIo,
    redis: svcRedis,
  } = await measured(ctx, 'latency (service)', () =>
    runLoad({
      baseUrl: ctx.api.baseUrl,
      apiKey: owner.apiKey,
      connections: 1,
      amount: n,
      pick: () => ({ questId: svcQuest!, address: pickAccount() }),
    }),
  );
  const v1 = await verifyLoad(ctx, [svcQuest!], load);

  const ref = await referenceRun(ctx, 'latency', { connections: 1, amount: n, quests: 1, seed: 1 });

  const [limQuest] = await seedQuests(infra.sql, owner.ownerId, 1, 'latency-limit');
  ctx.log(`latency: limit, ${n} sequential ledger transactions`);
  const { result: direct, cpu: limitCpu } = await withLimitPool(ctx, 1, (sql) =>
    measured(ctx, 'latency (limit)', () =>
      directSingle(sql, {
        concurrency: 1,
        amount: n,
        pick: () => ({ questId: limQuest!, address: pickAccount() }),
      }),
    ),
  );
  const v2 = await verifyDirect(ctx, [limQuest!], direct);

  return finish(
    ctx,
    'latency',
    [v1, v2, ...(ref ? [ref.verdict] : [])],
    [
      { metric: 'p50', unit: 'ms', service: load.latency.p50, limit: direct.latency.p50, reference: ref?.load.latency.p50 },
      { metric: 'p90', unit: 'ms', service: load.latency.p90, limit: direct.latency.p90, reference: ref?.load.latency.p90 },
      { metric: 'p99', unit: 'ms', service: load.latency.p99, limit: direct.latency.p99, reference: ref?.load.latency.p99 },
      { metric: 'allocations/s (1 client)', unit: '/s', service: load.rate, limit: direct.rate, reference: ref?.load.rate },
      {
        metric: 'CPU per allocation (all processes)',
        unit: 'ms',
        service: cpuPerCredit(svcCpu, load.ok200, 'service'),
        limit: cpuPerCredit(limitCpu, direct.completed, 'limit'),
        reference: ref ? cpuPerCredit(ref.cpu, ref.load.ok200, 'reference') : undefined,
      },
      {
        metric: 'I/O system calls per allocation (API + workers)',
        unit: 'per',
        service: perCredit(ioCalls(svcIo, ['api', 'workers']), load.ok200),
        limit: undefined,
        reference: ref ? perCredit(ioCalls(ref.io, ['reference']), ref.load.ok200) : undefined,
      },
      {
        metric: 'Redis commands per allocation (of which Lua scripts)',
        unit: 'text',
        service: svcRedis
          ? `${(svcRedis.commands / Math.max(1, load.ok200)).toFixed(1)} (${(svcRedis.scripts / Math.max(1, load.ok200)).toFixed(1)})`
          : null,
        limit: undefined,
      },
    ],
    {
      service: { ...lean(load), cpu: svcCpu, io: svcIo, redis: svcRedis },
      limit: { ...lean(direct), cpu: limitCpu },
      reference: ref && { ...lean(ref.load), cpu: ref.cpu, io: ref.io },
    },
    [
      `latency: I/O system calls per allocation (reads + writes): ${ioNote(svcIo, load.ok200)}${ref ? `; reference ${ioNote(ref.io, ref.load.ok200)}` : ''}`,
      `latency: ${load.ok200} × 200, ${load.accepted202} × 202; max ${formatValue(load.latency.max, 'ms')} (limit max ${formatValue(direct.latency.max, 'ms')})`,
      cpuNote('latency (service)', load.elapsedS, svcCpu, load.ok200),
      cpuNote('latency (limit)', direct.elapsedS, limitCpu, direct.completed),
      ...(ref ? [cpuNote('latency (reference)', ref.load.elapsedS, ref.cpu, ref.load.ok200)] : []),
    ],
  );
}

/** Reads + writes of the given roles. */
function ioCalls(io: Record<string, { reads: number; writes: number }>, roles: readonly string[]): number {
  return roles.reduce((t, r) => t + (io[r]?.reads ?? 0) + (io[r]?.writes ?? 0), 0);
}

const perCredit = (n: number, credits: number) => (credits ? n / credits : null);

/** "api 2.1 + 2.0, workers 7.0 + 6.1, redis-server …" per credit. */
function ioNote(io: Record<string, { reads: number; writes: number }>, credits: number): string {
  return Object.entries(io)
    .filter(([, v]) => (v.reads + v.writes) / credits >= 0.05)
    .map(([role, v]) => `${role} ${(v.reads / credits).toFixed(1)} + ${(v.writes / credits).toFixed(1)}`)
    .join(', ');
}

/**
 * CPU milliseconds per credit of one side of a comparison, over every process that side runs
 * (PostgreSQL's backends and shared work included; the load generator and other people's
 * processes excluded): `service` = API + workers + Redis + their PostgreSQL work; `reference` = the
 * reference process + its PostgreSQL work; `limit` = the bench's limit driver + its transactions.
 */
export function cpuPerCredit(
  cpu: Record<string, number>,
  credits: number,
  side: 'service' | 'reference' | 'limit',
): number | null {
  if (!credits) return null;
  let total = 0;
  for (const [group, seconds] of Object.entries(cpu)) {
    if (group.startsWith('other')) continue;
    const isReference = group === 'reference' || group === 'postgres: reference queries';
    const isLimit = group.startsWith('bench (') || group === 'postgres: limit transactions';
    const shared = group === 'postgres (shared: WAL, checkpoints)' || group === 'postgres: autovacuum';
    const mine =
      side === 'reference'
        ? isReference
        : side === 'limit'
          ? isLimit
          : !isReference && !isLimit && !shared && group !== 'postgres: bench checks';
    if (mine || shared) total += seconds;
  }
  return (total * 1000) / credits;
}

/** The same closed-loop load as the service's, sent to the reference service (when it runs). */
async function referenceRun(
  ctx: Ctx,
  label: string,
  opts: { connections: number; quests: number; seed: number; amount?: number; durationS?: number },
): Promise<
  | {
      load: LoadResult;
      cpu: Record<string, number>;
      io: Record<string, { reads: number; writes: number }>;
      verdict: Verdict;
    }
  | undefined
> {
  const reference = ctx.reference;
  if (!reference) return undefined;
  const quests = await seedQuests(ctx.infra.sql, ctx.owner.ownerId, opts.quests, `${label}-reference`);
  const r = rng(opts.seed);
  const pick = () => ({
    questId: quests[Math.floor(r() * quests.length)]!,
    address: ctx.accounts[Math.floor(r() * ctx.cfg.accountPool)]!,
  });
  ctx.log(`${label}: reference service, ${opts.connections} connection${opts.connections > 1 ? 's' : ''}`);
  const {
    result: load,
    cpu,
    io,
  } = await measured(ctx, `${label} (reference)`, () =>
    runLoad({
      baseUrl: reference.baseUrl,
      apiKey: ctx.owner.apiKey,
      connections: opts.connections,
      ...(opts.amount !== undefined ? { amount: opts.amount } : { durationS: opts.durationS }),
      pick,
    }),
  );
  return { load, cpu, io, verdict: await verifyLoad(ctx, quests, load) };
}

// ───────────────────── 2. throughput (+ 6. memory) / 5. scale ─────────────────────

export interface JobStats {
  jobs: number;
  items: number;
  byWorker: Record<string, { jobs: number; items: number }>;
}

/** Allocation jobs finished between two instants, per worker (BullMQ's completed set is scored by finishedOn). */
export async function jobStats(
  redis: Redis,
  prefix: string,
  partitions: number,
  fromMs: number,
  toMs: number,
): Promise<JobStats> {
  const out: JobStats = { jobs: 0, items: 0, byWorker: {} };
  for (let p = 0; p < partitions; p++) {
    const q = `${prefix}:${partitionQueueName(p)}`;
    const ids = await redis.zrangebyscore(`${q}:completed`, fromMs, toMs);
    for (let i = 0; i < ids.length; i += 2000) {
      const pipe = redis.pipeline();
      for (const id of ids.slice(i, i + 2000)) pipe.hmget(`${q}:${id}`, 'name', 'pb', 'data');
      for (const [, v] of (await pipe.exec()) ?? []) {
        const [name, by, data] = (v ?? []) as (string | null)[];
        if (name !== 'allocate' || !data) continue;
        const items = (JSON.parse(data) as { items: unknown[] }).items.length;
        const w = (out.byWorker[by ?? '?'] ??= { jobs: 0, items: 0 });
        w.jobs++;
        w.items += items;
        out.jobs++;
        out.items += items;
      }
    }
  }
  return out;
}

function shareText(stats: JobStats): string {
  const names = Object.keys(stats.byWorker).sort();
  if (!stats.items) return '—';
  return names
    .map((n) => `${n.replace(/^bench-/, '')} ${Math.round((100 * stats.byWorker[n]!.items) / stats.items)}%`)
    .join(' / ');
}

interface ServiceRun {
  load: LoadResult;
  verdict: Verdict;
  quests: number[];
  cpu: Record<string, number>;
  jobs: JobStats;
  rss?: Record<string, { pid: number; peakRssMb: number; hwmMb: number; samples: number }>;
}

async function throughputServiceRun(
  ctx: Ctx,
  label: string,
  opts: { durationS: number; hot: boolean; sampleMemory: boolean; seed: number },
) {
  const { cfg, infra, owner } = ctx;
  const quests = await seedQuests(infra.sql, owner.ownerId, opts.hot ? 1 : cfg.throughputQuests, label);
  const r = rng(opts.seed);
  const pick = () => ({
    questId: quests[Math.floor(r() * quests.length)]!,
    address: ctx.accounts[Math.floor(r() * cfg.accountPool)]!,
  });
  const services = [ctx.api, ...ctx.workers()];
  const sampler = opts.sampleMemory ? sampleRss(services) : undefined;
  let fromMs = Date.now();
  const { result: load, cpu } = await measured(ctx, `${label} (service)`, () => {
    fromMs = Date.now();
    return runLoad({
      baseUrl: ctx.api.baseUrl,
      apiKey: owner.apiKey,
      connections: cfg.connections,
      durationS: opts.durationS,
      pick,
    });
  });
  const toMs = Date.now();
  const rss = sampler?.stop();
  const verdict = await verifyLoad(ctx, quests, load);
  const jobs = await jobStats(infra.redis, infra.prefix, cfg.partitions, fromMs, toMs + 1000);
  return { load, verdict, quests, cpu, jobs, rss } satisfies ServiceRun;
}

/** CPU used per process group during a run and, given the number of credits, per credit (µs). */
export function cpuNote(label: string, elapsedS: number, cpu: Record<string, number>, credits?: number): string {
  const parts = Object.entries(cpu)
    .sort((a, b) => b[1] - a[1])
    .map(([k, v]) => `${k} ${v.toFixed(1)} s (${Math.round((100 * v) / elapsedS)}%)`);
  let per = '';
  if (credits) {
    const groups: Record<string, number> = {};
    for (const [k, v] of Object.entries(cpu)) {
      if (k.startsWith('other')) continue;
      const g = k.startsWith('bench-w') ? 'workers' : k.startsWith('bench (') ? 'bench' : k.split(/[ :]/)[0]!;
      groups[g] = (groups[g] ?? 0) + v;
    }
    const total = Object.values(groups).reduce((a, b) => a + b, 0);
    per = `; per credit: ${Object.entries(groups)
      .sort((a, b) => b[1] - a[1])
      .map(([k, v]) => `${k} ${Math.round((v * 1e6) / credits)} µs`)
      .join(', ')} (total ${Math.round((total * 1e6) / credits)} µs)`;
  }
  return `${label}: CPU over ${elapsedS.toFixed(1)} s wall: ${parts.join(', ')}${per}`;
}

async function singleLimit(ctx: Ctx, label: string, hot: boolean, durationS: number, seed: number) {
  const quests = await seedQuests(ctx.infra.sql, ctx.owner.ownerId, hot ? 1 : ctx.cfg.throughputQuests, label);
  const r = rng(seed);
  const pick = () => ({
    questId: quests[Math.floor(r() * quests.length)]!,
    address: ctx.accounts[Math.floor(r() * ctx.cfg.accountPool)]!,
  });
  const { result: direct, cpu } = await withLimitPool(ctx, ctx.cfg.connections, (sql) =>
    measured(ctx, `${label} (single-item)`, () => directSingle(sql, { concurrency: ctx.cfg.connections, durationS, pick })),
  );
  return { direct, verdict: await verifyDirect(ctx, quests, direct), cpu };
}

async function coalescedLimit(ctx: Ctx, label: string, hot: boolean, durationS: number, seed: number) {
  const quests = await seedQuests(ctx.infra.sql, ctx.owner.ownerId, hot ? 1 : ctx.cfg.throughputQuests, label);
  const r = rng(seed);
  const pick = () => ({
    questId: quests[Math.floor(r() * quests.length)]!,
    address: ctx.accounts[Math.floor(r() * ctx.cfg.accountPool)]!,
  });
  const { result: direct, cpu } = await withLimitPool(ctx, ctx.cfg.partitions, (sql) =>
    measured(ctx, `${label} (coalesced)`, () =>
      directCoalesced(sql, {
        clients: ctx.cfg.connections,
        partitions: ctx.cfg.partitions,
        maxItems: 500,
        durationS,
        pick,
      }),
    ),
  );
  return { direct, verdict: await verifyDirect(ctx, quests, direct), cpu };
}

export async function throughputScenario(
  ctx: Ctx,
  which: 'throughput' | 'hot',
  opts: { withLimit: boolean; sampleMemory: boolean },
) {
  const { cfg } = ctx;
  const hot = which === 'hot';
  const durationS = hot ? cfg.hotS : cfg.throughputS;
  ctx.log(
    `${which}: ${cfg.connections} connections, ${hot ? '1 quest' : `${cfg.throughputQuests} quests`}, ${durationS} s, ${ctx.workers().length} workers`,
  );
  const svc = await throughputServiceRun(ctx, which, { durationS, hot, sampleMemory: opts.sampleMemory, seed: hot ? 3 : 2 });
  const notes = [
    `${which}: ${svc.load.ok200} × 200, ${svc.load.accepted202} × 202, non-2xx ${JSON.stringify(svc.load.otherStatus)}, ` +
      `in flight at stop ${svc.load.sent - svc.load.received}; ${svc.jobs.jobs} jobs, ${(svc.jobs.items / Math.max(1, svc.jobs.jobs)).toFixed(1)} items/job; share ${shareText(svc.jobs)}`,
    cpuNote(`${which} (service)`, svc.load.elapsedS, svc.cpu, svc.load.ok200),
  ];
  const verdicts = [svc.verdict];
  const ref = await referenceRun(ctx, which, {
    connections: cfg.connections,
    quests: hot ? 1 : cfg.throughputQuests,
    durationS,
    seed: hot ? 3 : 2,
  });
  if (ref) {
    verdicts.push(ref.verdict);
    notes.push(cpuNote(`${which} (reference)`, ref.load.elapsedS, ref.cpu, ref.load.ok200));
  }
  let single: Awaited<ReturnType<typeof singleLimit>> | undefined;
  let coalesced: Awaited<ReturnType<typeof coalescedLimit>> | undefined;
  if (opts.withLimit) {
    ctx.log(`${which}: limit, ${cfg.connections} concurrent single-item ledger transactions, ${cfg.limitS} s`);
    single = await singleLimit(ctx, `${which}-limit`, hot, cfg.limitS, hot ? 13 : 12);
    verdicts.push(single.verdict);
    if (!hot) ctx.shared.throughputLimit = single.direct;
    ctx.log(`${which}: limit, coalesced lists (${cfg.partitions} partitions, ${cfg.connections} clients), ${cfg.coalescedS} s`);
    coalesced = await coalescedLimit(ctx, `${which}-limit-coalesced`, hot, cfg.coalescedS, hot ? 23 : 22);
    verdicts.push(coalesced.verdict);
    notes.push(cpuNote(`${which} limit (single-item)`, single.direct.elapsedS, single.cpu, single.direct.completed));
    notes.push(cpuNote(`${which} limit (coalesced)`, coalesced.direct.elapsedS, coalesced.cpu, coalesced.direct.completed));
    notes.push(
      `${which} limit: single-item ${single.direct.transactions} tx; coalesced ${coalesced.direct.transactions} tx, ` +
        `${coalesced.direct.itemsPerTransaction?.toFixed(1)} items/tx, per-item wait p50 ${formatValue(coalesced.direct.latency.p50, 'ms')} p99 ${formatValue(coalesced.direct.latency.p99, 'ms')}`,
    );
  }
  const non2xx = sumValues(svc.load.otherStatus);
  const rows: Omit<Row, 'status' | 'scenario'>[] = [
    {
      metric: 'allocations/s (limit: single-item tx)',
      unit: '/s',
      service: svc.load.rate,
      limit: single?.direct.rate ?? null,
      reference: ref?.load.rate,
    },
    {
      metric: 'allocations/s (limit: coalesced lists)',
      unit: '/s',
      service: svc.load.rate,
      limit: coalesced?.direct.rate ?? null,
    },
    {
      metric: 'p50',
      unit: 'ms',
      service: svc.load.latency.p50,
      limit: single?.direct.latency.p50 ?? null,
      reference: ref?.load.latency.p50,
    },
    {
      metric: 'p99',
      unit: 'ms',
      service: svc.load.latency.p99,
      limit: single?.direct.latency.p99 ?? null,
      reference: ref?.load.latency.p99,
    },
    {
      metric: 'CPU per allocation (all processes)',
      unit: 'ms',
      service: cpuPerCredit(svc.cpu, svc.load.ok200, 'service'),
      limit: single ? cpuPerCredit(single.cpu, single.direct.completed, 'limit') : null,
      reference: ref ? cpuPerCredit(ref.cpu, ref.load.ok200, 'reference') : undefined,
    },
    { metric: 'non-2xx / 202', unit: 'text', service: `${non2xx} / ${svc.load.accepted202}`, limit: undefined },
  ];
  if (hot) rows.splice(2, 1); // hot: no p50 row (kept in JSON)
  const raw: Record<string, unknown> = {
    service: { ...lean(svc.load), cpu: svc.cpu, jobs: svc.jobs },
    limitSingle: single && { ...lean(single.direct), cpu: single.cpu },
    limitCoalesced: coalesced && lean(coalesced.direct),
    reference: ref && { ...lean(ref.load), cpu: ref.cpu },
  };
  const out = await finish(ctx, which, verdicts, rows, raw, notes);
  return { out, svc };
}

export function memoryOutput(svc: ServiceRun): ScenarioOutput {
  const rss = svc.rss ?? {};
  const names = Object.keys(rss).sort((a, b) => (a === 'api' ? -1 : b === 'api' ? 1 : a.localeCompare(b)));
  const ok = svc.verdict.ok;
  return {
    name: 'memory',
    ok,
    rows: names.map((n) => ({
      scenario: 'memory',
      metric: `peak RSS ${n} (during throughput)`,
      unit: 'MB' as const,
      service: rss[n]!.peakRssMb,
      status: ok ? 'PASS' : 'FAILED',
    })),
    raw: { rss },
    notes: [
      `memory: VmRSS sampled every 200 ms during the throughput run; VmHWM (peak since process start) ${names
        .map((n) => `${n} ${rss[n]!.hwmMb.toFixed(0)} MB`)
        .join(', ')}`,
    ],
  };
}

export async function scaleScenario(ctx: Ctx): Promise<ScenarioOutput> {
  const { cfg } = ctx;
  if (!ctx.shared.throughputLimit) {
    ctx.log(`scale: measuring the single-item limit first (${cfg.limitS} s)`);
    ctx.shared.throughputLimit = (await singleLimit(ctx, 'scale-limit', false, cfg.limitS, 32)).direct;
  }
  const limit = ctx.shared.throughputLimit;
  const rows: Omit<Row, 'status' | 'scenario'>[] = [];
  const verdicts: Verdict[] = [];
  const raw: Record<string, unknown> = {};
  const notes: string[] = [];
  let base: number | undefined;
  for (const n of cfg.scaleWorkers) {
    await ctx.restartWorkers(n);
    ctx.log(`scale: ${n} worker${n > 1 ? 's' : ''}: ${cfg.throughputS} s at ${cfg.connections} connections`);
    const svc = await throughputServiceRun(ctx, `scale-${n}`, {
      durationS: cfg.throughputS,
      hot: false,
      sampleMemory: true,
      seed: 40 + n,
    });
    verdicts.push(svc.verdict);
    base ??= svc.load.rate;
    rows.push({ metric: `allocations/s, ${n} worker${n > 1 ? 's' : ''}`, unit: '/s', service: svc.load.rate, limit: limit.rate });
    rows.push({
      metric: `p99, ${n} worker${n > 1 ? 's' : ''}`,
      unit: 'ms',
      service: svc.load.latency.p99,
      limit: limit.latency.p99,
    });
    rows.push({ metric: `speed-up vs 1 worker, ${n}w`, unit: 'x', service: svc.load.rate / base, limit: undefined, ratio: null });
    rows.push({ metric: `work share, ${n}w (items by worker)`, unit: 'text', service: shareText(svc.jobs), limit: undefined });
    notes.push(cpuNote(`scale ${n}w`, svc.load.elapsedS, svc.cpu, svc.load.ok200));
    notes.push(
      `scale ${n}w: peak RSS ${Object.entries(svc.rss ?? {})
        .map(([k, v]) => `${k} ${v.peakRssMb.toFixed(0)} MB`)
        .join(', ')}; ${svc.jobs.jobs} jobs, ${(svc.jobs.items / Math.max(1, svc.jobs.jobs)).toFixed(1)} items/job`,
    );
    raw[`workers_${n}`] = { service: { ...lean(svc.load), cpu: svc.cpu, jobs: svc.jobs, rss: svc.rss } };
  }
  return finish(ctx, 'scale', verdicts, rows, raw, notes);
}

// ───────────────────────────── 4. batch ─────────────────────────────

export async function batchScenario(ctx: Ctx): Promise<ScenarioOutput> {
  const { cfg, infra, owner } = ctx;
  const addresses = ctx.accounts.slice(0, cfg.batchItems);
  const nBatches = Math.ceil(cfg.batchItems / cfg.batchSize);
  const [qConc, qSeq, qLimit, qCli] = await seedQuests(infra.sql, owner.ownerId, 4, 'batch');
  const verdicts: Verdict[] = [];

  ctx.log(`batch: ${cfg.batchItems} credits as ${nBatches} × ${cfg.batchSize}, ${cfg.batchConcurrency} in flight`);
  const { result: conc, cpu: concCpu } = await measured(ctx, 'batch in flight (service)', () =>
    runBatchesHttp({
      baseUrl: ctx.api.baseUrl,
      apiKey: owner.apiKey,
      questId: qConc!,
      addresses,
      batchSize: cfg.batchSize,
      concurrency: cfg.batchConcurrency,
    }),
  );
  verdicts.push(await verifyBatch(ctx, qConc!, conc));

  ctx.log(`batch: the same, sequential`);
  const { result: seq, cpu: seqCpu } = await measured(ctx, 'batch sequential (service)', () =>
    runBatchesHttp({
      baseUrl: ctx.api.baseUrl,
      apiKey: owner.apiKey,
      questId: qSeq!,
      addresses,
      batchSize: cfg.batchSize,
      concurrency: 1,
    }),
  );
  verdicts.push(await verifyBatch(ctx, qSeq!, seq));

  ctx.log(`batch: quest-admin credit of ${groupThousands(addresses.length)} rows (the CLI process, spawn to exit)`);
  const { result: cli, cpu: cliCpu } = await measured(
    ctx,
    'batch CLI (service)',
    () => runCreditCli({ baseUrl: ctx.api.baseUrl, apiKey: owner.apiKey, questId: qCli!, addresses }),
    { sampleEveryMs: 50 },
  );
  verdicts.push(await verifyCreditCli(ctx, qCli!, addresses.length, cli));

  ctx.log(`batch: limit, processBatch-style chunks of ${cfg.chunkSize} through applyAllocations`);
  const { result: direct, cpu: limitCpu } = await withLimitPool(ctx, 1, (sql) =>
    measured(ctx, 'batch (limit)', () =>
      directBatches(sql, {
        questId: qLimit!,
        ownerId: owner.ownerId,
        addresses,
        batchSize: cfg.batchSize,
        chunkSize: cfg.chunkSize,
      }),
    ),
  );
  verdicts.push(await verifyDirect(ctx, [qLimit!], direct));

  const p = (xs: number[]) => `${Math.round(Math.min(...xs))}–${Math.round(Math.max(...xs))} ms`;
  return finish(
    ctx,
    'batch',
    verdicts,
    [
      { metric: `credits/s, ${cfg.batchConcurrency} batches in flight`, unit: '/s', service: conc.rate, limit: direct.rate },
      { metric: 'credits/s, sequential', unit: '/s', service: seq.rate, limit: direct.rate },
      {
        metric: `quest-admin credit, ${groupThousands(addresses.length)} rows (CLI, spawn to exit)`,
        unit: '/s',
        service: cli.rate,
        limit: direct.rate,
      },
      {
        metric: 'quest-admin credit ÷ batches in flight',
        unit: 'x',
        service: cli.rate / conc.rate,
        limit: undefined,
      },
      { metric: 'quest-admin credit peak RSS (goal ≤ 200 MB)', unit: 'MB', service: cli.peakRssMb ?? null, limit: undefined },
      {
        metric: 'end-to-end time, in flight / sequential',
        unit: 'text',
        service: `${conc.elapsedS.toFixed(2)} s / ${seq.elapsedS.toFixed(2)} s`,
        limit: undefined,
      },
    ],
    {
      concurrent: { ...lean(conc), cpu: concCpu },
      sequential: { ...lean(seq), cpu: seqCpu },
      cli: { ...cli, stderr: cli.stderr.slice(0, 2000), cpu: cliCpu },
      limit: { ...lean(direct), cpu: limitCpu },
    },
    [
      `batch: in flight ${conc.answered200} × 200 + ${conc.answered202} × 202, per batch ${p(conc.batchMs)}; sequential ${seq.answered200} × 200 + ${seq.answered202} × 202, per batch ${p(seq.batchMs)}; limit ${direct.transactions} chunk tx, chunk p50 ${formatValue(direct.latency.p50, 'ms')}`,
      cpuNote('batch in flight (service)', conc.elapsedS, concCpu, conc.succeeded),
      cpuNote('batch sequential (service)', seq.elapsedS, seqCpu, seq.succeeded),
      `batch CLI: ${cli.elapsedS.toFixed(2)} s spawn to exit, peak RSS ${cli.peakRssMb === undefined ? 'n/a' : `${Math.round(cli.peakRssMb)} MB`}`,
      cpuNote('batch CLI (service)', cli.elapsedS, cliCpu, cli.summary?.credited ?? 0),
      cpuNote('batch (limit)', direct.elapsedS, limitCpu, direct.completed),
    ],
  );
}
