import { join } from 'node:path';
import { Command, Option } from 'commander';
import { REPO_ROOT } from '@quest/testing/processes';
import { loadWorkerConfig } from '@quest/worker/env';
import { type BenchConfig, benchConfig, SCENARIOS, type ScenarioName } from './config.ts';

/** `npm run bench -- [options]`: the command line, parsed into the options, the scenarios to run and their config. */

export interface BenchOptions {
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
  peer: boolean;
  /** KEY=VALUE settings for the service's API and worker processes (attribution experiments). */
  env?: string[];
}

function program(): Command {
  return new Command()
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
    .option(
      '--env <KEY=VALUE...>',
      "extra environment of the service's API and worker processes, e.g. --env RATE_LIMITS_ENABLED=false (to attribute a feature's cost)",
    )
    .option('--keep', 'keep the bench database and Redis keys afterwards (for inspection)', false)
    .option(
      '--no-peer',
      'skip the obvious-queue peer (one BullMQ job per request, waitUntilFinished, one worker at concurrency 1) in latency, throughput, hot and open-loop',
    )
    .option(
      '--no-reference',
      'skip the reference service (a plain synchronous Fastify + postgres.js service) in latency, throughput and hot',
    );
}

export function parseOptions(argv: readonly string[] = process.argv): {
  opts: BenchOptions;
  selected: Set<ScenarioName>;
  cfg: BenchConfig;
} {
  const opts = program().parse(argv).opts<BenchOptions>();
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
  return { opts, selected, cfg };
}
