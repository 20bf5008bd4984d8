import { Redis } from 'ioredis';
import { createSql, type Sql } from '@quest/db';
import { createOwner } from '@quest/db/owners';
import { migrate } from '@quest/db/migrate';
import { partitionQueueName } from '@quest/queue';
import { type CliRun, runCli } from '@quest/testing/cli';
import { onExitCleanup } from '@quest/testing/exit';
import { UNTHROTTLED_RATE_LIMITS } from '@quest/testing/limits';
import { freePort } from '@quest/testing/ports';
import { type PrivatePostgres, type PrivatePostgresPair, startPostgres, startPostgresPair } from '@quest/testing/postgres';
import { type ServiceProcess, startApiProcess, startWorker } from '@quest/testing/processes';
import { type PrivateRedis, startRedis } from '@quest/testing/redis';
import { createAccounts, createQuests, randomAddress } from '@quest/testing/seed';
import { startTcpFaultProxy, type TcpFaultProxy } from '@quest/testing/tcp-proxy';
import { ownedPartitions, poolUnsettled } from '@quest/testing/workers';
import type { WebhookReceiver } from '@quest/testing/webhooks';

/** The verifying receiver a webhook scenario subscribes (webhooks.ts), and its endpoint's id. */
export interface ChaosWebhooks {
  receiver: WebhookReceiver;
  endpointId: string;
}

/**
 * One whole service on private servers: PostgreSQL, Redis, the real API process on a fixed free
 * port (so a restarted API answers where the clients already point) and N real worker processes.
 * Every process exit is recorded; one the scenario did not cause itself is a crash.
 */

export interface Proc {
  name: string;
  proc: ServiceProcess;
  /** Set by the scenario before it kills the process on purpose. */
  expectedExit: boolean;
}

export interface ClusterOptions {
  workers: number;
  /** Extra environment of the first worker process. */
  firstWorkerEnv?: Record<string, string>;
  redisPersistence: 'aof' | 'none';
  /**
   * `pair`: a primary, a synchronous standby and an asynchronous one that is never promoted, every
   * process given all three hosts (a multi-host DATABASE_URL).
   */
  postgres?: 'single' | 'pair';
  env?: Record<string, string>;
  /** The first worker reaches PostgreSQL and Redis through TCP fault proxies (`Cluster.proxies`). */
  proxyFirstWorker?: boolean;
}

export const CHAOS_ENV: Record<string, string> = {
  QUEUE_PREFIX: 'chaos',
  QUEUE_PARTITIONS: '4',
  LOG_LEVEL: 'info',
  DATABASE_POOL_MAX: '5',
  // Short waits: more requests are answered 202 and must be followed to their outcome.
  ALLOCATION_WAIT_MS: '1000',
  BATCH_WAIT_MS: '2000',
  JOB_RETENTION_SECONDS: '120',
  // The reconciler (issue 10) re-drives pending work quickly in this suite.
  RECONCILER_INTERVAL_MS: '500',
  RECONCILER_MIN_AGE_MS: '2000',
  SHUTDOWN_TIMEOUT_MS: '10000',
  // The load is 16 clients on one address with one key: not what the protective defaults are for.
  ...UNTHROTTLED_RATE_LIMITS,
};

export class Cluster {
  readonly procs: Proc[] = [];
  sql!: Sql;
  env!: Record<string, string>;
  apiPort = 0;
  owner!: { id: string; apiKey: string };
  questIds: number[] = [];
  creditQuestId = 0;
  accounts: `0x${string}`[] = [];
  /** The owner's webhook endpoint and its receiver, in the scenarios that subscribe one. */
  webhooks: ChaosWebhooks | undefined;
  /** The first worker's paths to PostgreSQL and Redis, when the scenario asked for proxies. */
  proxies: { pg: TcpFaultProxy; redis: TcpFaultProxy } | undefined;
  /** Moments a scenario records while it injects its fault (e.g. `promoted`), by name. */
  readonly marks = new Map<string, number>();
  private constructor(
    private readonly db: { kind: 'single'; pg: PrivatePostgres } | { kind: 'pair'; pair: PrivatePostgresPair },
    readonly redis: PrivateRedis,
  ) {}

  /** The single PostgreSQL server (scenarios on a `single` cluster). */
  get pg(): PrivatePostgres {
    if (this.db.kind !== 'single') throw new Error('this cluster runs a primary and a standby: use `pair`');
    return this.db.pg;
  }

  /** The primary and its standby (scenarios on a `pair` cluster). */
  get pair(): PrivatePostgresPair {
    if (this.db.kind !== 'pair') throw new Error('this cluster runs one PostgreSQL server: use `pg`');
    return this.db.pair;
  }

  /** Point the checker's own pool at `url` (after a failover: the new primary alone, named directly). */
  async useCheckerUrl(url: string): Promise<void> {
    const old = this.sql;
    this.sql = createSql(url, { max: 4, applicationName: 'quest-chaos-checker', connectTimeout: 5 });
    await old?.end({ timeout: 1 }).catch(() => {});
  }

  static async start(opts: ClusterOptions): Promise<Cluster> {
    const [db, redis] = await Promise.all([
      opts.postgres === 'pair'
        ? startPostgresPair({ asyncStandby: true }).then((pair) => ({ kind: 'pair' as const, pair }))
        : startPostgres().then((pg) => ({ kind: 'single' as const, pg })),
      startRedis(opts.redisPersistence),
    ]);
    const c = new Cluster(db, redis);
    try {
      const url = db.kind === 'pair' ? db.pair.url('quest_chaos') : db.pg.url('quest_chaos');
      await migrate(url);
      c.sql = createSql(url, { max: 4, applicationName: 'quest-chaos-checker', connectTimeout: 5 });
      c.env = { ...CHAOS_ENV, DATABASE_URL: url, REDIS_URL: redis.url, ...opts.env };
      const { owner, apiKey } = await createOwner(c.sql, { name: 'Chaos owner', pass: randomAddress() });
      c.owner = { id: owner.id, apiKey };
      c.questIds = await createQuests(c.sql, 4, { ownerId: owner.id, totalPoints: 1_000_000_000 });
      const [creditQuest] = await createQuests(c.sql, 1, { ownerId: owner.id, totalPoints: 1_000_000_000, name: 'Credit' });
      c.creditQuestId = creditQuest!;
      c.accounts = await createAccounts(c.sql, 50);
      c.apiPort = await freePort();
      await c.startApi();
      if (opts.proxyFirstWorker) {
        if (db.kind !== 'single') throw new Error('proxied workers run on a single PostgreSQL server');
        const pg = new URL(url);
        const rd = new URL(redis.url);
        c.proxies = {
          pg: await startTcpFaultProxy({ host: pg.hostname, port: Number(pg.port) }),
          redis: await startTcpFaultProxy({ host: rd.hostname, port: Number(rd.port) }),
        };
      }
      for (let i = 0; i < opts.workers; i++) {
        const proxied: Record<string, string> =
          i === 0 && c.proxies
            ? { DATABASE_URL: c.proxies.pg.proxyUrl(url), REDIS_URL: c.proxies.redis.proxyUrl(redis.url) }
            : {};
        await c.startWorker({ ...(i === 0 ? opts.firstWorkerEnv : {}), ...proxied });
      }
      await c.waitForPool();
      return c;
    } catch (err) {
      await c.stop();
      throw err;
    }
  }

  get baseUrl(): string {
    return `http://127.0.0.1:${this.apiPort}`;
  }

  private track(name: string, proc: ServiceProcess): Proc {
    const p: Proc = { name, proc, expectedExit: false };
    this.procs.push(p);
    const pid = proc.child.pid;
    const unregister = onExitCleanup(() => {
      if (proc.child.exitCode === null && proc.child.signalCode === null && pid) process.kill(pid, 'SIGKILL');
    });
    void proc.exited.then(unregister);
    return p;
  }

  async startApi(): Promise<Proc> {
    const { process: proc } = await startApiProcess({ ...this.env, PORT: String(this.apiPort) });
    return this.track('api', proc);
  }

  async startWorker(extra: Record<string, string> = {}): Promise<Proc> {
    const proc = await startWorker({ ...this.env, ...extra }, 60_000);
    return this.track(`worker${this.procs.filter((p) => p.name.startsWith('worker')).length + 1}`, proc);
  }

  live(kind: 'api' | 'worker'): Proc[] {
    return this.procs.filter(
      (p) => p.name.startsWith(kind) && p.proc.child.exitCode === null && p.proc.child.signalCode === null,
    );
  }

  /** Processes that exited without the scenario asking for it, with the tail of their output. */
  crashes(): string[] {
    return this.procs
      .filter((p) => !p.expectedExit && (p.proc.child.exitCode !== null || p.proc.child.signalCode !== null))
      .map((p) => {
        const tail = p.proc
          .output()
          .split('\n')
          .filter((l) => /error|fatal|exit/i.test(l))
          .slice(-2)
          .map((l) => l.slice(0, 300))
          .join(' | ');
        return `${p.name} exited (${p.proc.child.exitCode ?? p.proc.child.signalCode}): ${tail}`;
      });
  }

  /** Wait (bounded) until Redis lists exactly the live worker processes as pool members. */
  async waitForPool(timeoutMs = 30_000): Promise<boolean> {
    const redis = new Redis(this.redis.url, { maxRetriesPerRequest: 1, retryStrategy: () => 200 });
    redis.on('error', () => {});
    const deadline = Date.now() + timeoutMs;
    try {
      while (Date.now() < deadline) {
        try {
          const live = this.live('worker').map((p) => p.proc);
          if ((await poolUnsettled(redis, this.env.QUEUE_PREFIX!, live)) === undefined) return true;
        } catch {}
        await new Promise((r) => setTimeout(r, 100));
      }
      return false;
    } finally {
      redis.disconnect();
    }
  }

  /** The partitions a worker owns by its latest "partitions rebalanced" log line. */
  ownedPartitions(p: Proc): number[] {
    return ownedPartitions(p.proc);
  }

  /**
   * The worker that has just taken a job carrying a request without an Idempotency-Key (a generated
   * key), found by polling the partitions' active lists — so a freeze lands while that job is in
   * hand, most often before its transaction: the zombie case of issue 10. Undefined if none is
   * seen within `timeoutMs`.
   */
  async workerInMidJob(timeoutMs: number): Promise<Proc | undefined> {
    const prefix = this.env.QUEUE_PREFIX!;
    const partitions = Number(this.env.QUEUE_PARTITIONS);
    const redis = new Redis(this.redis.url, { maxRetriesPerRequest: 1 });
    redis.on('error', () => {});
    const deadline = Date.now() + timeoutMs;
    try {
      while (Date.now() < deadline) {
        for (let p = 0; p < partitions; p++) {
          const queue = `${prefix}:${partitionQueueName(p)}`;
          for (const id of await redis.lrange(`${queue}:active`, 0, -1)) {
            const data = await redis.hget(`${queue}:${id}`, 'data');
            const keys = ((data ? JSON.parse(data) : {}).items ?? []).map((i: { key: string }) => i.key) as string[];
            if (!keys.some((k) => /^alc_[0-7]/.test(k))) continue;
            const w = this.live('worker').find((x) => this.ownedPartitions(x).includes(p));
            if (w) return w;
          }
        }
      }
      return undefined;
    } catch {
      return undefined;
    } finally {
      redis.disconnect();
    }
  }

  /** Run `quest-admin` with the cluster's database (killed after `timeoutMs`, then `hung`). */
  admin(args: string[], timeoutMs: number): Promise<CliRun> {
    return runCli(args, {
      env: { ...process.env, DATABASE_URL: this.env.DATABASE_URL!, API_BASE_URL: this.baseUrl },
      timeoutMs,
    });
  }

  async stop(): Promise<void> {
    await this.webhooks?.receiver.close();
    await Promise.all(
      this.procs.map((p) => {
        p.expectedExit = true;
        return p.proc.stop('SIGKILL');
      }),
    );
    await this.sql?.end({ timeout: 2 }).catch(() => {});
    await Promise.all([this.proxies?.pg.close(), this.proxies?.redis.close()]);
    await Promise.all([this.redis.stop(), this.db.kind === 'pair' ? this.db.pair.stop() : this.db.pg.stop()]);
  }
}
