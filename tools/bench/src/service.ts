import { randomBytes } from 'node:crypto';
import { createSql, type Sql } from '@quest/db';
import { createNumberedAccounts } from '@quest/testing/seed';
import type { ScenarioName } from './config.ts';
import type { BaseCtx, Ctx } from './context.ts';
import { runLoad } from './http-load.ts';
import { startPeer } from './peer.ts';
import { seedQuests } from './seed.ts';
import { type Service, type ServiceEnv, startApi, startReference, startWorkerProcess, waitForPool } from './services.ts';
import { WEBHOOK_BATCH_ITEMS } from './scenarios/webhooks.ts';
import { rng } from './stats.ts';

export interface ServiceOptions {
  selected: ReadonlySet<ScenarioName>;
  /** Run the reference service beside the service (latency, throughput and hot compare against it). */
  reference: boolean;
  /** Run the obvious-queue peer beside the service (the same scenarios compare against it). */
  peer: boolean;
  runtime: 'tsx' | 'bundle';
  /** node flags for a spawned process of the role (--cpu-prof when profiling it). */
  profileArgs(role: 'api' | 'worker'): string[];
  /** Extra environment of the API and the workers (--env), applied last. */
  env?: Record<string, string>;
}

/** The limit runs' pool, open between openLimitPool() and closeLimitPool() (ended on teardown too). */
let limitPool: Sql | undefined;

export async function endLimitPool(): Promise<void> {
  await limitPool?.end({ timeout: 2 }).catch(() => {});
}

/** The environment of the service's API and workers: the bench's infrastructure, then --env. */
function serviceEnv(base: BaseCtx, o: ServiceOptions): ServiceEnv {
  const { cfg } = base;
  return {
    DATABASE_URL: base.infra.databaseUrl,
    REDIS_URL: base.infra.redisUrl,
    QUEUE_PREFIX: base.infra.prefix,
    QUEUE_PARTITIONS: String(cfg.partitions),
    LOG_LEVEL: 'warn',
    BATCH_CHUNK_SIZE: String(cfg.chunkSize),
    // Webhooks on (the webhooks scenario's receiver listens on 127.0.0.1); no other scenario's
    // owner has an endpoint, so they only write the events the outbox always writes.
    WEBHOOK_SECRET_KEY: randomBytes(32).toString('hex'),
    WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
    ...o.env,
  };
}

/** A new limit pool of `max` connections, all open before it is returned (the last one ended). */
async function openLimitPool(base: BaseCtx, max: number): Promise<Sql> {
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
      base.log(
        `limit pool: server has no free connections for ${max}, waiting (held: ${holders.map((h) => `${h.datname ?? 'background'} ${h.n}`).join(', ')})`,
      );
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
}

/** Seed the service's accounts, start the API and the workers, warm them up: the context of the service's scenarios. */
export async function startService(base: BaseCtx, o: ServiceOptions): Promise<Ctx> {
  const { cfg, log } = base;
  const { selected, profileArgs } = o;
  const accountCount = Math.max(
    cfg.accountPool,
    selected.has('batch') ? cfg.batchItems : 0,
    selected.has('webhooks') ? WEBHOOK_BATCH_ITEMS : 0,
  );
  const accounts = await createNumberedAccounts(base.infra.sql, accountCount);
  await base.infra.sql`analyze`;
  log(`seeded owner, ${accounts.length} accounts`);

  const env = serviceEnv(base, o);
  let workers: Service[] = [];
  let generation = 0;
  const startWorkers = async (n: number) => {
    generation++;
    const ids = Array.from({ length: n }, (_, i) => `bench-w${i + 1}${generation > 1 ? `g${generation}` : ''}`);
    workers = ids.map((id) => startWorkerProcess(env, id, profileArgs('worker')));
    await waitForPool(base.infra.redis, base.infra.prefix, cfg.partitions, ids, workers);
  };

  log(`starting the API and ${cfg.workers} workers (${o.runtime})`);
  const [api] = await Promise.all([startApi(env, profileArgs('api')), startWorkers(cfg.workers)]);
  log(`API at ${api.baseUrl}; workers ${workers.map((w) => `${w.name}(pid ${w.pid})`).join(', ')}`);
  const compared = ['latency', 'throughput', 'hot', 'open-loop'].some((n) => selected.has(n as ScenarioName));
  const reference = o.reference && compared ? await startReference({ DATABASE_URL: base.infra.databaseUrl }) : undefined;
  if (reference) log(`reference service at ${reference.baseUrl}`);
  // The peer's one queue is not laid out for a cluster (its keys would need one hash tag).
  const onCluster = base.infra.redisUrl.startsWith('redis-cluster:');
  if (o.peer && compared && onCluster) log('obvious-queue peer skipped: it runs on a single Redis, not a cluster');
  const peer = o.peer && compared && !onCluster ? await startPeer(base, cfg.accountPool) : undefined;

  const warmQuests = await seedQuests(base.infra.sql, base.owner.ownerId, 32, 'warm-up');
  const peerWarmQuests = peer ? await seedQuests(peer.sql, peer.owner.ownerId, 32, 'warm-up') : [];
  const warm = async () => {
    const r = rng(99);
    // Unmeasured: connections, JIT and caches warm before the first measured run.
    const load = (baseUrl: string, apiKey = base.owner.apiKey, quests = warmQuests) =>
      runLoad({
        baseUrl,
        apiKey,
        connections: 16,
        durationS: cfg.warmupS,
        pick: () => ({
          questId: quests[Math.floor(r() * quests.length)]!,
          address: accounts[Math.floor(r() * cfg.accountPool)]!,
        }),
      });
    const w = await load(api.baseUrl);
    log(`warm-up: ${w.ok200} allocations in ${w.elapsedS.toFixed(1)} s (not measured)`);
    if (reference) {
      const wr = await load(reference.baseUrl);
      log(`warm-up: reference service ${wr.ok200} allocations (not measured)`);
    }
    if (peer) {
      const wp = await load(peer.api.baseUrl, peer.owner.apiKey, peerWarmQuests);
      log(`warm-up: obvious-queue peer ${wp.ok200} allocations (not measured)`);
    }
  };
  await warm();

  const ctx: Ctx = {
    ...base,
    services: () => [api, ...workers, ...(reference ? [reference] : []), ...(peer ? [peer.api, peer.worker] : [])],
    accounts,
    api,
    ...(reference ? { reference } : {}),
    ...(peer ? { peer } : {}),
    workers: () => workers,
    async restartWorkers(n) {
      log(`restarting workers: ${workers.length} → ${n}`);
      await Promise.all(workers.map((w) => w.stop('SIGTERM')));
      await startWorkers(n);
      await warm();
    },
    openLimitPool: (max) => openLimitPool(base, max),
    async closeLimitPool() {
      await limitPool?.end({ timeout: 5 });
      limitPool = undefined;
    },
    shared: {},
  };
  return ctx;
}
