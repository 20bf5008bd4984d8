import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { Ctx, ScenarioOutput } from '../context.ts';
import { type DirectResult, directSingle } from '../direct.ts';
import { cpuNote, cpuPerCredit, ioCalls, ioNote, perCredit } from '../figures.ts';
import { type LoadResult, runLoad } from '../http-load.ts';
import { measured, withLimitPool } from '../measure.ts';
import { seedQuests } from '../seed.ts';
import { formatValue, type Row, rng } from '../stats.ts';
import { finish, lean, verifyDirect, verifyLoad } from '../verify.ts';
import { type SideRun, sideRun } from './runs.ts';

interface Quantiles {
  p50: number;
  p90: number;
  p99: number;
}

/**
 * The queue floor in this run (`queue-floor.ts`, its own process and key prefix): lone no-op
 * requests through the service's producer, partition pool and reply stream, no HTTP, no PostgreSQL.
 * A lone allocation is the reference's work plus this, at best — in time and in CPU.
 */
interface QueueFloor {
  queue: Quantiles;
  redis: Quantiles;
  postgres: Quantiles;
  /** CPU milliseconds per queued no-op request: its producer process, the worker process, Redis. */
  cpu: { producer: number; worker: number; redis: number; total: number };
}

async function queueFloor(ctx: Ctx, requests: number): Promise<QueueFloor> {
  const script = fileURLToPath(new URL('../queue-floor.ts', import.meta.url));
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [
      ...process.execArgv,
      script,
      '--json',
      '--requests',
      String(requests),
      '--redis-url',
      ctx.infra.redisUrl,
      '--pg-url',
      ctx.infra.databaseUrl,
    ],
    { timeout: 120_000 },
  );
  return JSON.parse(stdout.trim().split('\n').at(-1)!);
}

/** "62.2 (5.1)": Redis commands per allocation over a run (of which Lua scripts), all clients of the server. */
function redisPerAllocation(redis: { commands: number; scripts: number } | undefined, allocations: number): string | null {
  if (!redis) return null;
  const per = (n: number) => (n / Math.max(1, allocations)).toFixed(1);
  return `${per(redis.commands)} (${per(redis.scripts)})`;
}

type Measured<T> = Awaited<ReturnType<typeof measured<T>>>;

/** The latency scenario's runs: each side's lone requests, the idle service, the queue floor. */
interface LatencyRuns {
  service: Measured<LoadResult>;
  limit: Measured<DirectResult>;
  idle: Measured<unknown>;
  /** The idle run's nominal length, s. */
  idleS: number;
  ref: SideRun | undefined;
  peer: SideRun | undefined;
  floor: QueueFloor;
}

/** "1.20 ms (producer … + worker … + Redis …)": the queue floor's CPU per request. */
function floorCpuText(floor: QueueFloor): string {
  const ms = (v: number) => formatValue(v, 'ms');
  return `${ms(floor.cpu.total)} (producer ${ms(floor.cpu.producer)} + worker ${ms(floor.cpu.worker)} + Redis ${ms(floor.cpu.redis)})`;
}

function latencyRows({ service, limit, idle, idleS, ref, peer, floor }: LatencyRuns): Omit<Row, 'status' | 'scenario'>[] {
  const { result: load, cpu: svcCpu, io: svcIo, redis: svcRedis } = service;
  const { result: direct, cpu: limitCpu } = limit;
  return [
    ...(['p50', 'p90', 'p99'] as const).map((q) => ({
      metric: q,
      unit: 'ms' as const,
      service: load.latency[q],
      limit: direct.latency[q],
      reference: ref?.load.latency[q],
      peer: peer?.load.latency[q],
    })),
    {
      metric: 'allocations/s (1 client)',
      unit: '/s',
      service: load.rate,
      limit: direct.rate,
      reference: ref?.load.rate,
      peer: peer?.load.rate,
    },
    {
      metric: 'CPU per allocation (all processes)',
      unit: 'ms',
      service: cpuPerCredit(svcCpu, load.ok200, 'service'),
      limit: cpuPerCredit(limitCpu, direct.completed, 'limit'),
      reference: ref ? cpuPerCredit(ref.cpu, ref.load.ok200, 'reference') : undefined,
      peer: peer ? cpuPerCredit(peer.cpu, peer.load.ok200, 'peer') : undefined,
    },
    {
      metric: 'I/O system calls per allocation (API + workers)',
      unit: 'per',
      service: perCredit(ioCalls(svcIo, ['api', 'workers']), load.ok200),
      limit: undefined,
      reference: ref ? perCredit(ioCalls(ref.io, ['reference']), ref.load.ok200) : undefined,
      peer: peer ? perCredit(ioCalls(peer.io, ['peer']), peer.load.ok200) : undefined,
    },
    {
      metric: 'idle: CPU of the service per second, no requests (all processes)',
      unit: 'ms',
      service: cpuPerCredit(idle.cpu, idleS, 'service') ?? 0,
      limit: undefined,
    },
    {
      metric: 'idle: Redis commands per second, no requests',
      unit: 'per',
      service: idle.redis ? idle.redis.commands / idle.wallS : null,
      limit: undefined,
    },
    {
      metric: 'queue floor p50 / p99 (no-op request: add → worker → reply)',
      unit: 'text',
      service: `${formatValue(floor.queue.p50, 'ms')} / ${formatValue(floor.queue.p99, 'ms')}`,
      limit: undefined,
    },
    {
      metric: 'queue floor CPU per request (producer + worker + Redis)',
      unit: 'text',
      service: floorCpuText(floor),
      limit: undefined,
    },
    {
      metric: 'p50 ÷ (reference p50 + queue floor p50)',
      unit: 'x',
      service: ref ? load.latency.p50 / (ref.load.latency.p50 + floor.queue.p50) : null,
      limit: undefined,
    },
    {
      metric: 'Redis commands per allocation (of which Lua scripts)',
      unit: 'text',
      service: redisPerAllocation(svcRedis, load.ok200),
      limit: undefined,
      peer: peer ? redisPerAllocation(peer.redis, peer.load.ok200) : undefined,
    },
  ];
}

function latencyNotes({ service, limit, idle, ref, peer, floor }: LatencyRuns): string[] {
  const { result: load, cpu: svcCpu, io: svcIo } = service;
  const { result: direct, cpu: limitCpu } = limit;
  return [
    `latency: I/O system calls per allocation (reads + writes): ${ioNote(svcIo, load.ok200)}${ref ? `; reference ${ioNote(ref.io, ref.load.ok200)}` : ''}`,
    `latency: queue floor p50 ${formatValue(floor.queue.p50, 'ms')}, p99 ${formatValue(floor.queue.p99, 'ms')}, CPU per request ${floorCpuText(floor)}; Redis PING p50 ${formatValue(floor.redis.p50, 'ms')}; PostgreSQL select 1 p50 ${formatValue(floor.postgres.p50, 'ms')}`,
    `latency: ${load.ok200} × 200, ${load.accepted202} × 202; max ${formatValue(load.latency.max, 'ms')} (limit max ${formatValue(direct.latency.max, 'ms')})`,
    cpuNote('idle (service)', idle.wallS, idle.cpu),
    cpuNote('latency (service)', load.elapsedS, svcCpu, load.ok200),
    cpuNote('latency (limit)', direct.elapsedS, limitCpu, direct.completed),
    ...(ref ? [cpuNote('latency (reference)', ref.load.elapsedS, ref.cpu, ref.load.ok200)] : []),
    ...(peer
      ? [
          cpuNote('latency (peer)', peer.load.elapsedS, peer.cpu, peer.load.ok200),
          `latency (peer): I/O system calls per allocation: ${ioNote(peer.io, peer.load.ok200)}`,
        ]
      : []),
  ];
}

export async function latencyScenario(ctx: Ctx): Promise<ScenarioOutput> {
  const { cfg, infra, owner } = ctx;
  const n = cfg.latencyRequests;
  const [svcQuest] = await seedQuests(infra.sql, owner.ownerId, 1, 'latency');
  const r = rng(1);
  const pickAccount = () => ctx.accounts[Math.floor(r() * cfg.accountPool)]!;
  // Idle first: what the service's processes (API, workers, Redis, their PostgreSQL work) burn with
  // no request at all — heartbeats, leases, the outbox pump's polling. A lone request pays its share.
  const idleS = cfg.quick ? 3 : 10;
  ctx.log(`latency: idle service, ${idleS} s`);
  const idle = await measured(ctx, 'idle (service)', () => new Promise((r) => setTimeout(r, idleS * 1000)));
  ctx.log(`latency: ${n} sequential POSTs, 1 connection`);
  const service = await measured(ctx, 'latency (service)', () =>
    runLoad({
      baseUrl: ctx.api.baseUrl,
      apiKey: owner.apiKey,
      connections: 1,
      amount: n,
      pick: () => ({ questId: svcQuest!, address: pickAccount() }),
    }),
  );
  const v1 = await verifyLoad(ctx, [svcQuest!], service.result);

  const ref = await sideRun(ctx, 'reference', 'latency', { connections: 1, amount: n, quests: 1, seed: 1 });
  const peer = await sideRun(ctx, 'peer', 'latency', { connections: 1, amount: n, quests: 1, seed: 1 });
  ctx.log(`latency: queue floor, ${n} sequential no-op requests through the queue`);
  const floor = await queueFloor(ctx, n);

  const [limQuest] = await seedQuests(infra.sql, owner.ownerId, 1, 'latency-limit');
  ctx.log(`latency: limit, ${n} sequential ledger transactions`);
  const limit = await withLimitPool(ctx, 1, (sql) =>
    measured(ctx, 'latency (limit)', () =>
      directSingle(sql, {
        concurrency: 1,
        amount: n,
        pick: () => ({ questId: limQuest!, address: pickAccount() }),
      }),
    ),
  );
  const v2 = await verifyDirect(ctx, [limQuest!], limit.result);

  const runs: LatencyRuns = { service, limit, idle, idleS, ref, peer, floor };
  return finish(
    ctx,
    'latency',
    [v1, v2, ...(ref ? [ref.verdict] : []), ...(peer ? [peer.verdict] : [])],
    latencyRows(runs),
    {
      service: { ...lean(service.result), cpu: service.cpu, io: service.io, redis: service.redis },
      limit: { ...lean(limit.result), cpu: limit.cpu },
      reference: ref && { ...lean(ref.load), cpu: ref.cpu, io: ref.io },
      peer: peer && { ...lean(peer.load), cpu: peer.cpu, io: peer.io, redis: peer.redis },
      queueFloor: floor,
    },
    latencyNotes(runs),
  );
}
