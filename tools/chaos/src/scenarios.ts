import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { partitionQueueName } from '@quest/queue';
import { Cluster } from './cluster.ts';
import { checkInvariants } from './invariants.ts';
import { onExitCleanup } from './servers.ts';
import { answerCounts, Load, type Op } from './load.ts';

/**
 * One scenario: a fresh service on private servers, load from concurrent retrying clients, one fault
 * injected during the load, then the invariants. The bounds below are the contract the suite holds
 * the service to; they are generous for a loaded 2-core machine, not speed targets.
 */

/** Every request answered 202 (or still retrying) is decided within this long after the load stops. */
export const RESOLVE_BOUND_MS = 45_000;
/** `quest-admin credit` ends (success or a clear error) within this long. */
export const CREDIT_BOUND_MS = 90_000;
/** The service answers /readyz 200 and the pool re-forms within this long after the load. */
export const HEALTH_BOUND_MS = 30_000;
/** Longer than WORKER_LOCK_MS (4 s): the frozen worker's job lock expires and its job is taken over. */
const FREEZE_MS = 9_000;
/** How long PostgreSQL stays down after an immediate stop. */
const PG_DOWN_MS = 3_000;

export interface Scenario {
  name: string;
  fault: string;
  workers: number;
  redis: 'aof' | 'none';
  firstWorkerEnv?: Record<string, string>;
  /** The quests the clients load (default: all of the cluster's). */
  loadQuests?(c: Cluster): number[];
  /** Run `quest-admin credit` through the fault. */
  credit: boolean;
  /** Inject the fault; `started()` marks the moment it took effect when the fault first waits for one. */
  inject(c: Cluster, started: () => void): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Longer than ALLOCATION_WAIT_MS (1 s), shorter than the job lock and the member TTL (3 s). */
const BACKLOG_MS = 1_500;

/**
 * Data loss matters for work Redis holds undecided: pause the workers (SIGSTOP) long enough for the
 * clients' requests to queue up and be answered 202, lose Redis's data, then resume the workers.
 */
async function withBacklog(c: Cluster, lose: () => Promise<void>): Promise<void> {
  const workers = c.live('worker');
  for (const w of workers) w.proc.child.kill('SIGSTOP');
  try {
    await sleep(BACKLOG_MS);
    await lose();
  } finally {
    for (const w of workers) w.proc.child.kill('SIGCONT');
  }
}

export const SCENARIOS: Scenario[] = [
  {
    name: 'pg-restart-fast',
    fault: 'PostgreSQL `pg_ctl restart -m fast`',
    workers: 2,
    redis: 'aof',
    credit: true,
    inject: (c) => c.pg.restartFast(),
  },
  {
    name: 'pg-stop-immediate',
    fault: `PostgreSQL \`pg_ctl stop -m immediate\`, ${PG_DOWN_MS / 1000} s down, start`,
    workers: 2,
    redis: 'aof',
    credit: true,
    inject: async (c) => {
      await c.pg.stopImmediate();
      await sleep(PG_DOWN_MS);
      await c.pg.start();
    },
  },
  {
    name: 'redis-kill-aof',
    fault: 'Redis `kill -9`, restart with AOF (everysec)',
    workers: 2,
    redis: 'aof',
    credit: false,
    inject: async (c) => {
      await c.redis.kill9();
      await c.redis.start();
    },
  },
  {
    name: 'redis-kill-nopersist',
    fault: 'Redis `kill -9` with a backlog queued, restart without persistence (data loss)',
    workers: 2,
    redis: 'none',
    credit: true,
    inject: (c) =>
      withBacklog(c, async () => {
        await c.redis.kill9();
        await c.redis.start();
      }),
  },
  {
    name: 'redis-flushall',
    fault: 'Redis `FLUSHALL` with a backlog queued (data loss, no restart)',
    workers: 2,
    redis: 'none',
    credit: true,
    inject: (c) => withBacklog(c, () => c.redis.flushAll()),
  },
  {
    name: 'worker-sigkill',
    fault: 'a worker `SIGKILL`',
    workers: 2,
    redis: 'aof',
    credit: false,
    inject: async (c) => {
      const w = c.live('worker')[0]!;
      w.expectedExit = true;
      w.proc.child.kill('SIGKILL');
      await w.proc.exited;
    },
  },
  {
    name: 'worker-sigstop',
    fault: `a worker \`SIGSTOP\` ${FREEZE_MS / 1000} s (> job lock), then \`SIGCONT\``,
    workers: 2,
    redis: 'aof',
    credit: false,
    inject: async (c, started) => {
      const w = (await c.workerInMidJob(3_000)) ?? c.live('worker')[0]!;
      w.proc.child.kill('SIGSTOP');
      started();
      try {
        await sleep(FREEZE_MS);
      } finally {
        w.proc.child.kill('SIGCONT');
      }
    },
  },
  {
    name: 'worker-zombie',
    fault: 'a worker `SIGSTOP`ped with a keyless job in hand before its transaction, `SIGCONT` after another worker decided it',
    workers: 2,
    redis: 'aof',
    credit: false,
    // One connection: a job of the worker's second partition waits for it, in hand but not yet looked up.
    firstWorkerEnv: { DATABASE_POOL_MAX: '1' },
    // The clients load the other worker's partitions, so the frozen worker holds exactly the jobs set up.
    loadQuests: (c) => {
      const owned = c.ownedPartitions(c.live('worker')[0]!);
      return c.questIds.filter((q) => !owned.includes(q % Number(c.env.QUEUE_PARTITIONS)));
    },
    inject: zombie,
  },
  {
    name: 'api-sigkill',
    fault: 'the API `SIGKILL`, restarted on its port',
    workers: 2,
    redis: 'aof',
    credit: false,
    inject: async (c) => {
      const api = c.live('api')[0]!;
      api.expectedExit = true;
      api.proc.child.kill('SIGKILL');
      await api.proc.exited;
      await c.startApi();
    },
  },
];

/**
 * The zombie of issue 10, made deterministic: the checker holds quest A's row lock, so the first
 * worker's only connection waits in A's transaction, and a keyless request to quest B (also its
 * partition) is taken as a job but waits for that connection. The worker is frozen there, the lock
 * released; the pool moves its partitions and the other worker decides B; then it resumes and runs
 * B's job as a first delivery. B must stay completed, never stored or reported failed.
 */
async function zombie(c: Cluster, started: () => void): Promise<void> {
  const partitions = Number(c.env.QUEUE_PARTITIONS);
  const w = c.live('worker')[0]!;
  const owned = c.ownedPartitions(w);
  const [qa, qb] = c.questIds.filter((q) => owned.includes(q % partitions));
  if (qa === undefined || qb === undefined) throw new Error(`worker owns partitions ${owned}: need two of the quests'`);
  const post = (quest: number) =>
    fetch(`${c.baseUrl}/quests/${quest}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': c.owner.apiKey },
      body: JSON.stringify({ points: 1, address: c.accounts[0] }),
      signal: AbortSignal.timeout(30_000),
    }).then(async (r) => ({ status: r.status, body: (await r.json()) as { allocation?: { id: string } } }));
  let bKey: string | undefined;
  await c.sql.begin(async (tx) => {
    await tx`select 1 from quests where id = ${qa} for update`;
    void post(qa).catch(() => {});
    // Wait (bounded) until the worker's connection is blocked on A's lock, then send B.
    await waitUntil(
      async () => (await c.sql`select 1 from pg_locks where not granted and locktype in ('transactionid', 'tuple')`).length > 0,
      10_000,
    );
    const b = post(qb);
    const queue = `${c.env.QUEUE_PREFIX}:${partitionQueueName(qb % partitions)}`;
    const redis = new (await import('ioredis')).Redis(c.redis.url, { maxRetriesPerRequest: 1 });
    try {
      await waitUntil(async () => (await redis.llen(`${queue}:active`)) > 0, 10_000);
    } finally {
      redis.disconnect();
    }
    w.proc.child.kill('SIGSTOP');
    started();
    const res = await b; // 202 after ALLOCATION_WAIT_MS: the pending marker is written
    bKey = res.body.allocation?.id;
  });
  try {
    if (!bKey) throw new Error('the zombie request was not answered 202');
    const key = bKey;
    await waitUntil(
      async () => (await c.sql`select 1 from payouts where quest_id = ${qb} and request_key = ${key}`).length > 0,
      30_000,
    );
  } finally {
    w.proc.child.kill('SIGCONT');
  }
}

async function waitUntil(cond: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await sleep(20);
  }
}

export interface LoadProfile {
  clients: number;
  /** Load before the fault, and after the fault was injected. */
  warmupMs: number;
  afterMs: number;
  creditRows: number;
}

export const FULL_LOAD: LoadProfile = { clients: 16, warmupMs: 2_000, afterMs: 4_000, creditRows: 400 };
export const SMALL_LOAD: LoadProfile = { clients: 6, warmupMs: 1_000, afterMs: 2_000, creditRows: 100 };

export interface ScenarioResult {
  name: string;
  fault: string;
  requests: number;
  s200: number;
  s202: number;
  s4xx: number;
  s5xx: number;
  errors: number;
  /** From the fault's injection until requests succeed again and the work pending at the fault is decided. */
  recoveryMs: number | undefined;
  credit?: string;
  violations: string[];
}

/**
 * Recovery: from the injection until every request sent before the fault ended (in flight when it
 * hit, or sent while it lasted) is decided, and a request sent after it ended was completed again.
 * Undefined ("never") when one of them was never decided.
 */
function recovery(ops: Op[], injectedAt: number, faultEnd: number): number | undefined {
  let okAgain: number | undefined;
  for (const op of ops)
    if (op.outcome === 'completed' && op.ackAt! >= faultEnd && (okAgain === undefined || op.ackAt! < okAgain)) okAgain = op.ackAt;
  if (okAgain === undefined) return undefined;
  let end = okAgain;
  for (const op of ops) {
    if (op.firstSentAt > faultEnd || op.outcome === 'abandoned') continue;
    if (op.ackAt === undefined) return undefined; // never decided
    if (op.ackAt > end) end = op.ackAt;
  }
  return end - injectedAt;
}

export async function runScenario(
  s: Scenario,
  profile: LoadProfile,
  log = (m: string) => console.error(m),
  /** Write every request's record (attempts, answers, times) to `<dumpDir>/chaos-<scenario>.json`. */
  dumpDir?: string,
): Promise<ScenarioResult> {
  const started = Date.now();
  const cluster = await Cluster.start({ workers: s.workers, redisPersistence: s.redis, firstWorkerEnv: s.firstWorkerEnv });
  const dir = mkdtempSync(join(tmpdir(), 'quest-chaos-credit-'));
  const unregister = onExitCleanup(() => rmSync(dir, { recursive: true, force: true }));
  try {
    log(`[${s.name}] service up in ${Date.now() - started} ms`);
    let deadline = Number.POSITIVE_INFINITY;
    const load = new Load(
      {
        baseUrl: () => cluster.baseUrl,
        apiKey: cluster.owner.apiKey,
        ownerId: cluster.owner.id,
        questIds: s.loadQuests?.(cluster) ?? cluster.questIds,
        accounts: cluster.accounts,
      },
      {
        clients: profile.clients,
        batchEvery: 10,
        batchSize: 25,
        unknownEvery: 23,
        keylessEvery: 4,
        httpTimeoutMs: 10_000,
        tag: s.name,
      },
      () => deadline,
    );
    load.start();
    await sleep(profile.warmupMs);

    let credit: Promise<{ code: number | null; ms: number; out: string; hung: boolean }> | undefined;
    if (s.credit) {
      const file = join(dir, 'credits.csv');
      const rows = Array.from(
        { length: profile.creditRows },
        (_, i) => `${cluster.accounts[i % cluster.accounts.length]},${1 + (i % 3)}`,
      );
      writeFileSync(file, `address,points\n${rows.join('\n')}\n`);
      credit = cluster.admin(
        [
          'credit',
          '--quest',
          String(cluster.creditQuestId),
          '--key',
          cluster.owner.apiKey,
          '--file',
          file,
          '--batch-size',
          String(Math.ceil(profile.creditRows / 4)),
          '--base-url',
          cluster.baseUrl,
        ],
        CREDIT_BOUND_MS,
      );
    }
    let injectedAt = Date.now();
    log(`[${s.name}] injecting: ${s.fault}`);
    await s.inject(cluster, () => {
      injectedAt = Date.now();
    });
    const faultEnd = Date.now();
    log(`[${s.name}] injected in ${faultEnd - injectedAt} ms; load continues`);
    await sleep(profile.afterMs);
    deadline = Date.now() + RESOLVE_BOUND_MS;
    await load.finish();
    log(`[${s.name}] load done: ${load.ops.length} requests`);

    const violations: string[] = [];
    let creditNote: string | undefined;
    if (credit) {
      const r = await credit;
      const line = r.out.trim().split('\n').filter(Boolean).at(-1)?.slice(0, 160) ?? '';
      if (r.hung) {
        creditNote = `hung > ${CREDIT_BOUND_MS / 1000} s`;
        violations.push(`quest-admin credit did not end within ${CREDIT_BOUND_MS / 1000} s`);
      } else if (r.code === 0) creditNote = `ok in ${(r.ms / 1000).toFixed(1)} s`;
      else {
        creditNote = `error (exit ${r.code}) in ${(r.ms / 1000).toFixed(1)} s`;
        if (!line) violations.push('quest-admin credit failed without a message');
        log(`[${s.name}] credit ended with exit ${r.code}: ${line}`);
      }
    }
    const healthy = await waitHealthy(cluster);
    if (!healthy.ok) violations.push(`not healthy ${HEALTH_BOUND_MS / 1000} s after the load: ${healthy.why}`);
    violations.push(...cluster.crashes().map((c) => `crash: ${c}`));
    violations.push(...(await checkInvariants(cluster, load.ops, RESOLVE_BOUND_MS)));
    const counts = answerCounts(load.ops);
    if (dumpDir)
      writeFileSync(
        join(dumpDir, `chaos-${s.name}.json`),
        JSON.stringify({
          injectedAt,
          ops: load.ops.map((o) => ({ ...o, payoutIds: [...o.payoutIds], itemPayouts: undefined, itemRejected: undefined })),
        }),
      );
    return {
      name: s.name,
      fault: s.fault,
      ...counts,
      recoveryMs: recovery(load.ops, injectedAt, faultEnd),
      credit: creditNote,
      violations,
    };
  } finally {
    await cluster.stop();
    rmSync(dir, { recursive: true, force: true });
    unregister();
    log(`[${s.name}] done in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  }
}

/** Every process still healthy: the API ready (PostgreSQL and Redis reachable), every live worker a pool member. */
async function waitHealthy(c: Cluster): Promise<{ ok: boolean; why: string }> {
  const deadline = Date.now() + HEALTH_BOUND_MS;
  let why = '';
  while (Date.now() < deadline) {
    const res = await fetch(`${c.baseUrl}/readyz`, { signal: AbortSignal.timeout(5000) }).catch(() => undefined);
    if (res?.status !== 200) why = `/readyz answered ${res?.status ?? 'nothing'}`;
    else if (c.live('api').length !== 1) why = 'no API process';
    else if (c.live('worker').length === 0) why = 'no worker process';
    else if (!(await c.waitForPool(1000))) why = 'pool members in Redis ≠ live workers';
    else return { ok: true, why: '' };
    await sleep(200);
  }
  return { ok: false, why };
}

export function formatTable(results: ScenarioResult[]): string {
  const lines = [
    '| Fault | Requests | 200 | 202 | 4xx | 5xx | conn. errors | Time to recover | `credit` | Violations |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---|---|',
  ];
  for (const r of results) {
    const v = r.violations.length === 0 ? '0' : `**${r.violations.length}**: ${summarize(r.violations)}`;
    const rec = r.recoveryMs === undefined ? 'never' : `${(r.recoveryMs / 1000).toFixed(1)} s`;
    lines.push(
      `| ${r.fault} | ${r.requests} | ${r.s200} | ${r.s202} | ${r.s4xx} | ${r.s5xx} | ${r.errors} | ${rec} | ${r.credit ?? '–'} | ${v} |`,
    );
  }
  return lines.join('\n');
}

/** Group violations by kind (the text before the first digit-bearing detail) for one table cell. */
function summarize(violations: string[]): string {
  const kinds = new Map<string, number>();
  for (const v of violations) {
    const kind = v
      .replace(/^(alloc|batch|allocation|request|quest \d+:) \S+( \(quest \d+\))?:?\s*/, '')
      .replace(/\|/g, '/')
      .slice(0, 90);
    kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
  }
  return [...kinds].map(([k, n]) => `${n}× ${k}`).join('; ');
}
