import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Command } from 'commander';
import type { Redis } from 'ioredis';
import postgres from 'postgres';
import { createAllocator, deleteKeysWithPrefix, producerConnection, ReplySender, redisConnection } from '@quest/queue';
import { PartitionPool } from '@quest/worker/pool';
import { cpuSeconds } from './probes/cpu.ts';
import { formatValue, markdownTable, percentile } from './stats.ts';

/**
 * `npm run queue-floor --workspace @quest/bench`: the cheapest a queued request can be on this
 * machine. The service's own pipeline — the API's producer (coalescing, `queue.add`, the reply
 * stream) and a worker process's partition pool (BullMQ worker, reply sender) — carries lone
 * requests one after another, but the worker's processor answers at once: no PostgreSQL. Beside it,
 * the round trips every request of the reference service makes: PostgreSQL `select 1`, and a Redis
 * `PING`, each from Node. A lone allocation cannot be faster than this floor plus its ledger
 * transaction, which is the whole work of the reference service. The queued requests' CPU is
 * measured too, per request: this process (the producer and its reply listener), the worker
 * process (from /proc), and Redis (its own `INFO cpu`, main thread and children).
 */

const program = new Command()
  .option('--redis-url <url>', 'Redis server', 'redis://127.0.0.1:6379')
  .option('--pg-url <url>', 'PostgreSQL server', 'postgres://postgres@127.0.0.1:5432/postgres')
  .option('--requests <n>', 'sequential requests per measurement', (v) => Number.parseInt(v, 10), 2000)
  .option('--json', 'print the p50/p90/p99 of each round trip as one JSON line (the bench reads it)')
  .option('--worker <prefix>', '(internal) run the worker side on this key prefix');
program.parse();
const opts = program.opts<{ redisUrl: string; pgUrl: string; requests: number; json?: boolean; worker?: string }>();

const PARTITIONS = 1;

/** The worker process: one partition pool whose handler decides nothing and replies at once. */
async function runWorker(prefix: string) {
  const replies = new ReplySender(producerConnection(opts.redisUrl), prefix);
  const logger = { info() {}, warn() {}, error: (o: object, m?: string) => console.error(m, o) };
  const pool = new PartitionPool({
    connection: redisConnection(opts.redisUrl),
    prefix,
    partitions: PARTITIONS,
    memberId: `floor-${process.pid}`,
    logger,
    replies,
    handlers: {
      allocate: async ({ items }) => ({
        outcomes: items.map(() => ({ status: 'failed' as const, code: 'ALLOCATION_FAILED' as const })),
        worker: 'floor',
      }),
      batch: () => Promise.reject(new Error('the queue floor sends no batches')),
    },
  });
  await pool.start();
  console.log('ready');
  process.on('SIGTERM', () => void pool.close().then(() => process.exit(0)));
}

/** CPU seconds Redis has used, by its own account (INFO cpu: used_cpu_user + used_cpu_sys). */
async function redisCpuSeconds(redis: Redis): Promise<number> {
  const info = await redis.info('cpu');
  const field = (name: string) => Number(new RegExp(`^${name}:([0-9.]+)`, 'm').exec(info)?.[1] ?? Number.NaN);
  return field('used_cpu_user') + field('used_cpu_sys');
}

/** `run`'s result, and the CPU milliseconds per call of the `calls` it makes: this process, the worker, Redis. */
async function withCpuPerCall<T>(redis: Redis, workerPid: number, calls: number, run: () => Promise<T>) {
  const self0 = process.cpuUsage();
  const worker0 = cpuSeconds(workerPid)?.cpu ?? Number.NaN;
  const redis0 = await redisCpuSeconds(redis);
  const result = await run();
  const self = process.cpuUsage(self0);
  const worker1 = cpuSeconds(workerPid)?.cpu ?? Number.NaN;
  const redis1 = await redisCpuSeconds(redis);
  const per = (seconds: number) => (seconds * 1000) / calls;
  const cpu = { producer: per((self.user + self.system) / 1e6), worker: per(worker1 - worker0), redis: per(redis1 - redis0) };
  return { result, cpu: { ...cpu, total: cpu.producer + cpu.worker + cpu.redis } };
}

async function timed(n: number, fn: () => Promise<unknown>): Promise<number[]> {
  const ms: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await fn();
    ms.push(performance.now() - t);
  }
  return ms;
}

async function main() {
  const n = opts.requests;
  const prefix = `qrfloor_${randomBytes(4).toString('hex')}`;
  const worker = spawn(
    process.execPath,
    [...process.execArgv, fileURLToPath(import.meta.url), '--worker', prefix, '--redis-url', opts.redisUrl],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  await new Promise<void>((resolve, reject) => {
    worker.stdout!.on('data', (d: Buffer) => d.toString().includes('ready') && resolve());
    worker.once('exit', (code) => reject(new Error(`worker exited ${code}`)));
  });
  const allocator = await createAllocator({ redisUrl: opts.redisUrl, prefix, partitions: PARTITIONS, waitMs: 5000 });
  const redis = redisConnection(opts.redisUrl) as Redis;
  const sql = postgres(opts.pgUrl, { max: 1, onnotice: () => {} });
  try {
    let k = 0;
    const item = () => ({ key: `floor-${k++}`, questId: 1, points: 1, address: `0x${'1'.repeat(40)}` });
    // Warm-up: connections, scripts loaded, JIT.
    await timed(300, () => allocator.allocate(item()));
    await timed(300, () => redis.ping());
    await timed(300, () => sql`select 1`);
    const { result: queueMs, cpu } = await withCpuPerCall(redis, worker.pid!, n, () =>
      timed(n, () => allocator.allocate(item())),
    );
    const rows = [
      {
        key: 'queue',
        what: 'queued no-op request: add → worker → reply (the service minus HTTP and PostgreSQL)',
        ms: queueMs,
      },
      { key: 'redis', what: 'Redis PING from Node (one round trip)', ms: await timed(n, () => redis.ping()) },
      { key: 'postgres', what: 'PostgreSQL select 1 from Node (one round trip)', ms: await timed(n, () => sql`select 1`) },
    ];
    const quantiles = (ms: number[]) => {
      const sorted = [...ms].sort((a, b) => a - b);
      return { p50: percentile(sorted, 50), p90: percentile(sorted, 90), p99: percentile(sorted, 99) };
    };
    if (opts.json) {
      console.log(JSON.stringify({ ...Object.fromEntries(rows.map((r) => [r.key, quantiles(r.ms)])), cpu }));
      return;
    }
    console.log(
      markdownTable(
        ['round trip', 'p50', 'p90', 'p99'],
        rows.map((r) => {
          const sorted = [...r.ms].sort((a, b) => a - b);
          return [r.what, ...[50, 90, 99].map((p) => formatValue(percentile(sorted, p), 'ms'))];
        }),
      ),
    );
    const ms = (v: number) => formatValue(v, 'ms');
    console.log(
      `\nCPU per queued no-op request: ${ms(cpu.total)} (producer ${ms(cpu.producer)}, worker ${ms(cpu.worker)}, Redis ${ms(cpu.redis)})`,
    );
  } finally {
    await allocator.close();
    worker.kill('SIGTERM');
    await deleteKeysWithPrefix(redis, prefix).catch(() => {});
    redis.disconnect();
    await sql.end();
  }
}

if (opts.worker) await runWorker(opts.worker);
else await main();
