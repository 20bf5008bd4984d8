import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Command, Option } from 'commander';
import { createSql, type Sql } from '@quest/db';
import { startRedisCluster, type TestRedisCluster } from '@quest/testing/redis-cluster';
import { runLoad } from './http-load.ts';
import { type BenchInfra, createInfra, REPO_ROOT } from './infra.ts';
import { formatMachine, machineInfo } from './machine.ts';
import { loadWorkerConfig } from '../../../apps/worker/src/env.ts';
import { apiScaleScenario } from './api-scale.ts';
import { bundleServices } from './build.ts';
import {
  liveServices,
  setBenchDatabase,
  useEntries,
  type Service,
  type ServiceEnv,
  startApi,
  startReference,
  startWorkerProcess,
  waitForPool,
} from './procs.ts';
import { summarizeProfileDir } from './profile.ts';
import { AUDIT_GOAL_S, adminScenario, IMPORT_GOAL_S } from './admin.ts';
import {
  type BaseCtx,
  batchScenario,
  benchConfig,
  type Ctx,
  latencyScenario,
  memoryOutput,
  SCENARIOS,
  type ScenarioName,
  type ScenarioOutput,
  scaleScenario,
  throughputScenario,
} from './scenarios.ts';
import { seedAccounts, seedOwner, seedQuests } from './seed.ts';
import { formatValue, groupThousands, markdownTable, type Row, resultsTable, rng } from './stats.ts';

const program = new Command()
  .name('bench')
  .description('Benchmarks the quest rewards service (API + workers as real processes) against the direct ledger transaction.')
  .option('--quick', 'short run (≈ 2 min): shorter durations, fewer items, scale with 1 and 2 workers', false)
  .option(
    '--scenario <names...>',
    `scenarios to run (comma or space separated): ${SCENARIOS.join(', ')}; admin alone starts no API or worker`,
  )
  .option('--workers <n>', 'worker processes for scenarios 1–4 and memory', (v) => Number.parseInt(v, 10))
  .option('--duration <seconds>', 'override the timed runs (throughput, hot, scale, limits)', (v) => Number(v))
  .option('--api-processes <list>', 'api-scale: API process counts (comma separated); default 1,2,4 (quick: 1,2)', (v) =>
    v.split(',').map((n) => Number.parseInt(n, 10)),
  )
  .option('--allocations <n>', 'api-scale: allocations per point; default 10000 (quick: 4000)', (v) => Number.parseInt(v, 10))
  .option(
    '--affinity',
    'api-scale: route requests to API processes by quest (partition mod n), like a hashing load balancer',
    false,
  )
  .option('--repeat <n>', 'api-scale: runs of each point (the machine is shared: compare them); default 1', (v) =>
    Number.parseInt(v, 10),
  )
  .option('--batch-concurrency <n>', 'batches in flight in the batch scenario', (v) => Number.parseInt(v, 10))
  .option('--chunk-size <n>', "BATCH_CHUNK_SIZE for the workers and the batch limit; default: the worker's own default", (v) =>
    Number.parseInt(v, 10),
  )
  .option('--partitions <n>', 'QUEUE_PARTITIONS for the service (and the coalesced limit); default 16', (v) =>
    Number.parseInt(v, 10),
  )
  .addOption(
    new Option(
      '--runtime <kind>',
      'bundle: esbuild bundles run by plain node, as npm start does; tsx: the TypeScript through tsx, as npm run dev and the tests do',
    )
      .choices(['tsx', 'bundle'])
      .default('bundle'),
  )
  .addOption(
    new Option('--profile <role>', 'run the API and/or workers with node --cpu-prof and summarise').choices([
      'api',
      'worker',
      'all',
    ]),
  )
  .option('--out <dir>', 'results directory', join(REPO_ROOT, 'bench-results'))
  .option(
    '--pg-url <url>',
    'PostgreSQL server (any database; a fresh qr_bench_* database is created)',
    'postgres://postgres@127.0.0.1:5432/postgres',
  )
  .option('--redis-url <url>', 'Redis server (a fresh key prefix is used)', 'redis://127.0.0.1:6379')
  .option(
    '--redis-cluster',
    'run on a three-master Redis Cluster the bench starts on free loopback ports (instead of --redis-url)',
    false,
  )
  .option('--keep', 'keep the bench database and Redis keys afterwards (for inspection)', false)
  .option(
    '--no-reference',
    'skip the reference service (a plain synchronous Fastify + postgres.js service) in latency, throughput and hot',
  );

program.parse();
const opts = program.opts<{
  quick: boolean;
  scenario?: string[];
  workers?: number;
  apiProcesses?: number[];
  affinity: boolean;
  allocations?: number;
  repeat?: number;
  duration?: number;
  batchConcurrency?: number;
  partitions?: number;
  chunkSize?: number;
  runtime: 'tsx' | 'bundle';
  profile?: 'api' | 'worker' | 'all';
  out: string;
  pgUrl: string;
  redisUrl: string;
  redisCluster: boolean;
  keep: boolean;
  reference: boolean;
}>();

const selected = new Set<ScenarioName>(
  (opts.scenario ?? [...SCENARIOS])
    .flatMap((s) => s.split(','))
    .map((s) => {
      const name = s.trim() as ScenarioName;
      if (!SCENARIOS.includes(name)) {
        console.error(`unknown scenario "${s}"; choose from ${SCENARIOS.join(', ')}`);
        process.exit(2);
      }
      return name;
    }),
);

const cfg = benchConfig(opts.quick, {
  ...(opts.workers ? { workers: opts.workers } : {}),
  ...(opts.batchConcurrency ? { batchConcurrency: opts.batchConcurrency } : {}),
  ...(opts.partitions ? { partitions: opts.partitions } : {}),
  // The batch limit must chunk exactly like the workers: their own default unless overridden.
  chunkSize: opts.chunkSize ?? loadWorkerConfig({}).BATCH_CHUNK_SIZE,
  ...(opts.duration
    ? { throughputS: opts.duration, hotS: opts.duration, limitS: opts.duration, coalescedS: Math.max(1, opts.duration / 2) }
    : {}),
});

const startedAt = new Date();
const tag = `${startedAt.toISOString().replace(/[-:]/g, '').replace(/\..*/, '').replace('T', '_').toLowerCase()}_${process.pid}`;
const t0 = Date.now();
const log = (msg: string) => console.log(`[bench +${((Date.now() - t0) / 1000).toFixed(1)}s] ${msg}`);

let infra: BenchInfra | undefined;
let redisCluster: TestRedisCluster | undefined;
let limitPool: Sql | undefined;
let tearingDown: Promise<void> | undefined;

async function teardown(graceful: boolean) {
  tearingDown ??= (async () => {
    await limitPool?.end({ timeout: 2 }).catch(() => {});
    // SIGTERM lets processes exit cleanly (and write --cpu-prof profiles); SIGKILL on abort.
    await Promise.all(liveServices().map((s) => s.stop(graceful ? 'SIGTERM' : 'SIGKILL')));
    if (infra && !opts.keep) await infra.cleanup();
    else if (infra) {
      await infra.sql.end({ timeout: 2 }).catch(() => {});
      infra.redis.disconnect();
      console.log(`kept database ${infra.dbName} and Redis prefix ${infra.prefix}`);
    }
    await redisCluster?.stop();
  })();
  return tearingDown;
}

let interrupted = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (interrupted) process.exit(130);
    interrupted = true;
    console.error(`\nbench: ${signal}: stopping processes and dropping the bench database…`);
    void teardown(false).finally(() => process.exit(130));
  });
}

const profileDir = opts.profile ? resolve(opts.out, 'profiles', tag) : undefined;
/** node flags for a spawned process: --cpu-prof when profiling its role (Node 20 refuses it in NODE_OPTIONS). */
function profileArgs(role: 'api' | 'worker'): string[] {
  if (!profileDir || (opts.profile !== 'all' && opts.profile !== role)) return [];
  const dir = join(profileDir, role);
  mkdirSync(dir, { recursive: true });
  return ['--cpu-prof', `--cpu-prof-dir=${dir}`];
}

async function main() {
  log(`${cfg.quick ? 'quick' : 'full'} run, scenarios: ${[...selected].join(', ')}`);
  if (opts.redisCluster) {
    redisCluster = await startRedisCluster({ masters: 3 });
    log(`Redis Cluster of 3 masters at ${redisCluster.nodes}`);
  }
  const redisUrl = redisCluster ? `redis-cluster://${redisCluster.nodes}` : opts.redisUrl;
  infra = await createInfra({ pgUrl: opts.pgUrl, redisUrl, tag });
  const { sql } = infra;
  setBenchDatabase(infra.dbName);
  const machine = await machineInfo(sql, infra.redis);
  const source = gitState();
  console.log(formatMachine(machine));
  log(`database ${infra.dbName}, Redis prefix ${infra.prefix}`);

  const owner = await seedOwner(sql);
  const base: BaseCtx = {
    cfg,
    infra,
    owner,
    services: () => [],
    log,
    disturbances: [],
    windows: [],
    quietBudget: { remainingS: cfg.quick ? 20 : 420 },
  };
  if (opts.runtime === 'bundle') {
    const dir = join(opts.out, `build-${tag}`);
    useEntries(await bundleServices(dir));
    log(`bundled the API, the worker and quest-admin into ${dir}`);
  }
  // Scenarios of the shared service need it running; admin (the CLI against the database) and
  // api-scale (processes of its own on a Redis of its own) do not.
  const ctx = [...selected].some((name) => name !== 'admin' && name !== 'api-scale') ? await startService(base) : undefined;

  const outputs: ScenarioOutput[] = [];
  const run = async (name: ScenarioName, fn: () => Promise<ScenarioOutput | ScenarioOutput[]>) => {
    const started = Date.now();
    const disturbedBefore = base.disturbances.length;
    try {
      const out = await fn();
      const disturbed = base.disturbances.length > disturbedBefore;
      for (const o of Array.isArray(out) ? out : [out]) {
        if (disturbed) for (const r of o.rows) r.status = `${r.status} (disturbed)`;
        outputs.push(o);
        for (const n of o.notes) log(n);
      }
    } catch (error) {
      log(`${name}: ERROR ${(error as Error).stack ?? error}`);
      outputs.push({
        name,
        ok: false,
        rows: [
          {
            scenario: name,
            metric: 'error',
            unit: 'text',
            service: String((error as Error).message).slice(0, 80),
            status: 'FAILED',
          },
        ],
        raw: { error: String((error as Error).stack ?? error) },
        notes: [],
      });
    }
    log(`${name}: done in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  };

  if (ctx) await runServiceScenarios(ctx, run);
  if (selected.has('api-scale')) {
    // Its own API and worker processes: stop the shared service's first, so they do not compete.
    await Promise.all((ctx ? [ctx.api, ...ctx.workers()] : []).map((s) => s.stop('SIGTERM')));
    await run('api-scale', () =>
      apiScaleScenario(base, {
        apiCounts: opts.apiProcesses ?? (cfg.quick ? [1, 2] : [1, 2, 4]),
        repeat: opts.repeat ?? 1,
        allocations: opts.allocations ?? (cfg.quick ? 4000 : 10_000),
        workers: cfg.workers,
        partitions: cfg.partitions,
        connections: cfg.connections,
        quests: cfg.throughputQuests,
        accountPool: cfg.accountPool,
        affinity: opts.affinity,
        profileArgs,
      }),
    );
  }
  // Last: it adds 100,000s of accounts and 1,000,000 payouts the other scenarios would work among.
  if (selected.has('admin')) await run('admin', () => adminScenario(ctx ?? base));

  const problems = (ctx ? [ctx.api, ...ctx.workers()] : []).map((s) => ({
    process: s.name,
    pid: s.pid,
    warnings: s.problems().length,
    sample: s.problems().slice(0, 5),
  }));
  log('stopping processes');
  await teardown(true);

  const rows: Row[] = outputs.flatMap((o) => o.rows);
  const table = resultsTable(rows);
  const goals = goalTable(outputs);
  const elapsedS = (Date.now() - t0) / 1000;

  const lines = [
    '',
    `## Quest rewards bench — ${cfg.quick ? 'quick' : 'full'} run, ${startedAt.toISOString()} (${elapsedS.toFixed(0)} s)`,
    '',
    formatMachine(machine),
    `code: ${source.head}${source.dirty.length ? ` + uncommitted changes in ${source.dirty.join(', ')}` : ''}`,
    `config: ${opts.runtime} runtime, ${cfg.workers} workers (scale: ${cfg.scaleWorkers.join('/')}), ${cfg.partitions} partitions, ${cfg.connections} connections, ` +
      `throughput/hot ${cfg.throughputS}/${cfg.hotS} s, limit ${cfg.limitS} s (coalesced ${cfg.coalescedS} s), ` +
      `${cfg.latencyRequests} latency requests, batch ${cfg.batchItems} = ${Math.ceil(cfg.batchItems / cfg.batchSize)} × ${cfg.batchSize} (chunks of ${cfg.chunkSize}), ` +
      `admin: import ${cfg.importRows} rows, audit ${cfg.auditPayouts} payouts`,
    '',
    'ratio = service ÷ limit (rates: higher is better, 1.00 = the service reaches the direct ledger transaction; latencies and times: lower is better).',
    'admin: service = the quest-admin CLI process, spawn to exit; limit = the @quest/db function it calls, in the bench process.',
    '“(disturbed)”: other processes on this shared machine used > 10 % of its CPU during a measured run of that scenario (see Disturbances).',
    'Throughput/hot ratio uses the single-item limit (what one-request-one-transaction could do); the coalesced-lists row is the ceiling of the service’s own job shape.',
    '',
    table,
    '',
    '### Goals (reported, not asserted)',
    '',
    goals,
    '',
  ];
  if (base.disturbances.length) {
    lines.push('### Disturbances (other processes on this shared machine)', '', ...base.disturbances.map((d) => `- ${d}`), '');
  }
  for (const p of problems)
    if (p.warnings) lines.push(`${p.process} logged ${p.warnings} warn/error lines, e.g. ${p.sample[0]?.slice(0, 300)}`);
  console.log(lines.join('\n'));

  mkdirSync(opts.out, { recursive: true });
  const file = join(opts.out, `bench-${tag}-${cfg.quick ? 'quick' : 'full'}.json`);
  const json = {
    startedAt: startedAt.toISOString(),
    finishedAt: new Date().toISOString(),
    elapsedS,
    mode: cfg.quick ? 'quick' : 'full',
    runtime: opts.runtime,
    scenarios: [...selected],
    config: cfg,
    machine,
    source,
    table,
    goals,
    rows,
    results: Object.fromEntries(outputs.map((o) => [o.name, { ok: o.ok, notes: o.notes, ...o.raw }])),
    processWarnings: problems,
    windows: base.windows,
    disturbances: base.disturbances,
    profileDir,
  };
  writeFileSync(file, `${JSON.stringify(json, null, 2)}\n`);
  console.log(`results written to ${file}`);

  if (profileDir) {
    writeFileSync(join(profileDir, 'windows.json'), `${JSON.stringify(base.windows, null, 2)}\n`);
    const serviceWindows = base.windows.filter((w) => w.label.includes('(service)'));
    console.log(`\nCPU profiles in ${profileDir} (summarised over the ${serviceWindows.length} measured service windows)`);
    for (const role of ['api', 'worker'] as const) {
      const summary = summarizeProfileDir(join(profileDir, role), 25, serviceWindows);
      if (summary) console.log(`\n### ${role}\n${summary}`);
    }
  }
  return outputs.every((o) => o.ok);
}

/** Seed the service's accounts, start the API and the workers, warm them up: the context of the service's scenarios. */
async function startService(base: BaseCtx): Promise<Ctx> {
  const accountCount = Math.max(cfg.accountPool, selected.has('batch') ? cfg.batchItems : 0);
  const accounts = await seedAccounts(base.infra.sql, accountCount);
  await base.infra.sql`analyze`;
  log(`seeded owner, ${accounts.length} accounts`);

  const env: ServiceEnv = {
    DATABASE_URL: base.infra.databaseUrl,
    REDIS_URL: base.infra.redisUrl,
    QUEUE_PREFIX: base.infra.prefix,
    QUEUE_PARTITIONS: String(cfg.partitions),
    LOG_LEVEL: 'warn',
    BATCH_CHUNK_SIZE: String(cfg.chunkSize),
  };
  let workers: Service[] = [];
  let generation = 0;
  const startWorkers = async (n: number) => {
    generation++;
    const ids = Array.from({ length: n }, (_, i) => `bench-w${i + 1}${generation > 1 ? `g${generation}` : ''}`);
    workers = ids.map((id) => startWorkerProcess(env, id, profileArgs('worker')));
    await waitForPool(base.infra.redis, base.infra.prefix, cfg.partitions, ids, workers);
  };

  log(`starting the API and ${cfg.workers} workers (${opts.runtime})`);
  const [api] = await Promise.all([startApi(env, profileArgs('api')), startWorkers(cfg.workers)]);
  log(`API at ${api.baseUrl}; workers ${workers.map((w) => `${w.name}(pid ${w.pid})`).join(', ')}`);
  const wantsReference = opts.reference && ['latency', 'throughput', 'hot'].some((n) => selected.has(n as ScenarioName));
  const reference = wantsReference ? await startReference({ DATABASE_URL: base.infra.databaseUrl }) : undefined;
  if (reference) log(`reference service at ${reference.baseUrl}`);

  const warmQuests = await seedQuests(base.infra.sql, base.owner.ownerId, 32, 'warm-up');
  const warm = async () => {
    const r = rng(99);
    const w = await runLoad({
      baseUrl: api.baseUrl,
      apiKey: base.owner.apiKey,
      connections: 16,
      durationS: cfg.warmupS,
      pick: () => ({
        questId: warmQuests[Math.floor(r() * warmQuests.length)]!,
        address: accounts[Math.floor(r() * cfg.accountPool)]!,
      }),
    });
    log(`warm-up: ${w.ok200} allocations in ${w.elapsedS.toFixed(1)} s (not measured)`);
    if (reference) {
      const wr = await runLoad({
        baseUrl: reference.baseUrl,
        apiKey: base.owner.apiKey,
        connections: 16,
        durationS: cfg.warmupS,
        pick: () => ({
          questId: warmQuests[Math.floor(r() * warmQuests.length)]!,
          address: accounts[Math.floor(r() * cfg.accountPool)]!,
        }),
      });
      log(`warm-up: reference service ${wr.ok200} allocations (not measured)`);
    }
  };
  await warm();

  const ctx: Ctx = {
    ...base,
    services: () => [api, ...workers, ...(reference ? [reference] : [])],
    accounts,
    api,
    ...(reference ? { reference } : {}),
    workers: () => workers,
    async restartWorkers(n) {
      log(`restarting workers: ${workers.length} → ${n}`);
      await Promise.all(workers.map((w) => w.stop('SIGTERM')));
      await startWorkers(n);
      await warm();
    },
    async openLimitPool(max) {
      await limitPool?.end({ timeout: 2 });
      const pool = createSql(base.infra.databaseUrl, { max, idleTimeout: 0, applicationName: 'quest-bench-limit' });
      limitPool = pool;
      const deadline = Date.now() + 60_000;
      for (;;) {
        try {
          await Promise.all(Array.from({ length: max }, () => pool`select pg_sleep(0.02)`));
          return pool;
        } catch (error) {
          // 53300: too many connections — the server is shared; wait for others to let go.
          if ((error as { code?: string }).code !== '53300' || Date.now() > deadline) throw error;
          const holders = await base.infra.sql<{ datname: string | null; n: number }[]>`
            select datname, count(*)::int as n from pg_stat_activity group by 1 order by 2 desc limit 4`.catch(() => []);
          log(
            `limit pool: server has no free connections for ${max}, waiting (held: ${holders.map((h) => `${h.datname ?? 'background'} ${h.n}`).join(', ')})`,
          );
          await new Promise((r) => setTimeout(r, 1000));
        }
      }
    },
    async closeLimitPool() {
      await limitPool?.end({ timeout: 5 });
      limitPool = undefined;
    },
    shared: {},
  };
  return ctx;
}

type Run = (name: ScenarioName, fn: () => Promise<ScenarioOutput | ScenarioOutput[]>) => Promise<void>;

async function runServiceScenarios(ctx: Ctx, run: Run): Promise<void> {
  if (selected.has('latency')) await run('latency', () => latencyScenario(ctx));
  if (selected.has('throughput') || selected.has('memory')) {
    await run(selected.has('throughput') ? 'throughput' : 'memory', async () => {
      const { out, svc } = await throughputScenario(ctx, 'throughput', {
        withLimit: selected.has('throughput'),
        sampleMemory: selected.has('memory'),
      });
      const list: ScenarioOutput[] = [];
      if (selected.has('throughput')) list.push(out);
      if (selected.has('memory')) list.push(memoryOutput(svc));
      return list;
    });
  }
  if (selected.has('hot'))
    await run('hot', async () => (await throughputScenario(ctx, 'hot', { withLimit: true, sampleMemory: false })).out);
  if (selected.has('batch')) await run('batch', () => batchScenario(ctx));
  if (selected.has('scale')) await run('scale', () => scaleScenario(ctx));
}

/** Which code was measured: HEAD and the files of apps/ and packages/ changed but not committed. */
function gitState(): { head: string; dirty: string[] } {
  const git = (args: string[]) => {
    try {
      // trimEnd only: porcelain lines start with a status column that may be a space.
      return execFileSync('git', args, { cwd: REPO_ROOT, encoding: 'utf8' }).trimEnd();
    } catch {
      return '';
    }
  };
  const head = git(['log', '-1', '--format=%h %s']) || 'unknown';
  const dirty = git(['status', '--porcelain', '--', 'apps', 'packages'])
    .split('\n')
    .filter(Boolean)
    .map((l) => l.slice(3));
  return { head, dirty };
}

function goalTable(outputs: ScenarioOutput[]): string {
  const find = (scenario: string, metric: string) =>
    outputs.flatMap((o) => o.rows).find((r) => r.scenario === scenario && r.metric.startsWith(metric));
  const num = (r: Row | undefined) => (typeof r?.service === 'number' ? r.service : undefined);
  const rows: string[][] = [];
  const add = (goal: string, value: string, met: boolean | undefined) =>
    rows.push([goal, value, met === undefined ? 'not measured' : met ? 'met' : 'MISSED']);
  const p50 = num(find('latency', 'p50'));
  const p99 = num(find('latency', 'p99'));
  add('1. latency p50 ≤ 3 ms', formatValue(p50, 'ms'), p50 === undefined ? undefined : p50 <= 3);
  add('1. latency p99 ≤ 15 ms', formatValue(p99, 'ms'), p99 === undefined ? undefined : p99 <= 15);
  const tp = find('throughput', 'allocations/s (limit: single');
  const tpRatio = typeof tp?.service === 'number' && tp.limit ? tp.service / tp.limit : undefined;
  add(
    '2. throughput ≥ 0.5 × single-item limit',
    tpRatio === undefined ? '—' : `${formatValue(num(tp), '/s')} = ${tpRatio.toFixed(2)} × ${formatValue(tp!.limit, '/s')}`,
    tpRatio === undefined ? undefined : tpRatio >= 0.5,
  );
  // Against the reference service (a plain synchronous Fastify + postgres.js service).
  const vsRef = (scenario: string, metric: string) => {
    const r = find(scenario, metric);
    const v = num(r);
    return v !== undefined && typeof r?.reference === 'number' && r.reference > 0
      ? { v, ref: r.reference, x: v / r.reference }
      : undefined;
  };
  const refGoal = (goal: string, c: ReturnType<typeof vsRef>, unit: 'ms' | '/s', max?: number, min?: number) =>
    add(
      goal,
      c ? `${formatValue(c.v, unit)} vs ${formatValue(c.ref, unit)} = ${c.x.toFixed(2)}×` : '—',
      c === undefined ? undefined : (max === undefined || c.x <= max) && (min === undefined || c.x >= min),
    );
  refGoal('latency p50 ≤ reference p50', vsRef('latency', 'p50'), 'ms', 1);
  refGoal('latency p99 ≤ 1.5 × reference p99', vsRef('latency', 'p99'), 'ms', 1.5);
  const cpuLone = num(find('latency', 'CPU per allocation'));
  add('CPU per lone allocation ≤ 1.5 ms', formatValue(cpuLone, 'ms'), cpuLone === undefined ? undefined : cpuLone <= 1.5);
  refGoal('throughput ≥ 2 × reference', vsRef('throughput', 'allocations/s (limit: single'), '/s', undefined, 2);
  const co = find('throughput', 'allocations/s (limit: coalesced');
  const coRatio = typeof co?.service === 'number' && co.limit ? co.service / co.limit : undefined;
  add(
    'throughput ≥ 0.6 × coalesced-lists limit',
    coRatio === undefined ? '—' : coRatio.toFixed(2),
    coRatio === undefined ? undefined : coRatio >= 0.6,
  );
  refGoal('hot quest ≥ 15 × reference', vsRef('hot', 'allocations/s (limit: single'), '/s', undefined, 15);
  const hotP99 = num(find('hot', 'p99'));
  add('hot quest p99 ≤ 50 ms', formatValue(hotP99, 'ms'), hotP99 === undefined ? undefined : hotP99 <= 50);
  const b = num(find('batch', 'credits/s,'));
  add('4. batch ≥ 30,000 credits/s', formatValue(b, '/s'), b === undefined ? undefined : b >= 30_000);
  const bRow = find('batch', 'credits/s,');
  const bRatio = b !== undefined && typeof bRow?.limit === 'number' && bRow.limit > 0 ? b / bRow.limit : undefined;
  add(
    'batches endpoint ≥ 0.9 × bulk-apply limit',
    bRatio === undefined ? '—' : `${formatValue(b, '/s')} = ${bRatio.toFixed(2)} × ${formatValue(bRow!.limit, '/s')}`,
    bRatio === undefined ? undefined : bRatio >= 0.9,
  );
  const cli = num(find('batch', 'quest-admin credit, '));
  add(
    `quest-admin credit ≥ 30,000 credits/s (${groupThousands(cfg.batchItems)} rows, spawn to exit)`,
    formatValue(cli, '/s'),
    cli === undefined ? undefined : cli >= 30_000,
  );
  const mem = [
    ...(outputs.find((o) => o.name === 'memory')?.rows ?? []),
    ...(outputs.find((o) => o.name === 'batch')?.rows.filter((r) => r.metric.startsWith('quest-admin credit peak RSS')) ?? []),
  ];
  const maxMem = mem.length ? Math.max(...mem.map((r) => num(r) ?? 0)) : undefined;
  add(
    '6. ≤ 200 MB RSS per process',
    maxMem === undefined ? '—' : `max ${formatValue(maxMem, 'MB')}`,
    maxMem === undefined ? undefined : maxMem <= 200,
  );
  const importRow = find('admin', 'account import, ');
  const importS = num(importRow);
  add(
    `admin: import ${groupThousands(cfg.importRows)} accounts (quest-admin account import) < ${IMPORT_GOAL_S} s`,
    importS === undefined ? '—' : `${formatValue(importS, 's')} (importAccounts ${formatValue(importRow!.limit, 's')})`,
    importS === undefined ? undefined : importS < IMPORT_GOAL_S,
  );
  const auditRow = find('admin', 'audit, ');
  const auditS = num(auditRow);
  add(
    `admin: audit over ${groupThousands(cfg.auditPayouts)} payouts (quest-admin audit) < ${AUDIT_GOAL_S} s`,
    auditS === undefined ? '—' : `${formatValue(auditS, 's')} (audit() ${formatValue(auditRow!.limit, 's')})`,
    auditS === undefined ? undefined : auditS < AUDIT_GOAL_S,
  );
  return markdownTable(['goal', 'measured', 'verdict'], rows);
}

main().then(
  async (ok) => {
    process.exit(ok ? 0 : 1);
  },
  async (error) => {
    console.error(`bench failed: ${(error as Error).stack ?? error}`);
    await teardown(false);
    process.exit(1);
  },
);
