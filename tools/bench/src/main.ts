import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { startRedisCluster, type TestRedisCluster } from '@quest/testing/redis-cluster';
import { bundleServices } from './build.ts';
import { parseOptions } from './cli.ts';
import type { BaseCtx } from './context.ts';
import { type BenchInfra, createInfra } from './infra.ts';
import { machineInfo, formatMachine } from './machine.ts';
import { addBenchDatabase } from './probes/cpu.ts';
import { gitState, report } from './report.ts';
import { runScenarios } from './run.ts';
import { seedOwner } from './seed.ts';
import { endLimitPool, startService } from './service.ts';
import { liveServices, useEntries } from './services.ts';

/**
 * `npm run bench`: the service (API + workers as real processes) against the direct ledger
 * transaction, on a fresh database and Redis prefix that are dropped at the end, on failure and on
 * Ctrl-C. See tools/bench/README.md.
 */

const { opts, selected, cfg } = parseOptions();

const startedAt = new Date();
const tag = `${startedAt.toISOString().replace(/[-:]/g, '').replace(/\..*/, '').replace('T', '_').toLowerCase()}_${process.pid}`;
const t0 = Date.now();
const log = (msg: string) => console.log(`[bench +${((Date.now() - t0) / 1000).toFixed(1)}s] ${msg}`);

let infra: BenchInfra | undefined;
let redisCluster: TestRedisCluster | undefined;
let tearingDown: Promise<void> | undefined;

async function teardown(graceful: boolean) {
  tearingDown ??= (async () => {
    await endLimitPool();
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
/** --env KEY=VALUE … as an environment (a malformed entry stops the run before anything starts). */
function serviceEnv(pairs: readonly string[] | undefined): Record<string, string> {
  const env: Record<string, string> = {};
  for (const pair of pairs ?? []) {
    const m = /^([A-Z][A-Z0-9_]*)=(.*)$/.exec(pair);
    if (!m) {
      console.error(`--env ${pair}: expected KEY=VALUE`);
      process.exit(2);
    }
    env[m[1]!] = m[2]!;
  }
  return env;
}

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
  addBenchDatabase(infra.dbName);
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
  const ctx = [...selected].some((name) => name !== 'admin' && name !== 'api-scale')
    ? await startService(base, {
        selected,
        reference: opts.reference,
        peer: opts.peer,
        runtime: opts.runtime,
        profileArgs,
        env: serviceEnv(opts.env),
      })
    : undefined;

  const outputs = await runScenarios(base, ctx, { selected, opts, profileArgs });

  const peer = ctx?.peer ? [ctx.peer.api, ctx.peer.worker] : [];
  const problems = (ctx ? [ctx.api, ...ctx.workers(), ...peer] : []).map((s) => ({
    process: s.name,
    pid: s.pid,
    warnings: s.problems().length,
    sample: s.problems().slice(0, 5),
  }));
  log('stopping processes');
  await teardown(true);

  report({ startedAt, tag, cfg, opts, selected, machine, source, base, outputs, problems, profileDir });
  return outputs.every((o) => o.ok);
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
