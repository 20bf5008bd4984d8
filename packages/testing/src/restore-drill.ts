import { createSql, type Sql } from '@quest/db';
import { migrate } from '@quest/db/migrate';
import { idempotentRequestKey } from '@quest/domain';
import { runCli } from './cli.ts';
import { onExitCleanup } from './exit.ts';
import { UNTHROTTLED_RATE_LIMITS } from './limits.ts';
import { type ArchivedPostgres, startArchivedPostgres } from './pgbackrest.ts';
import { type ServiceProcess, startApiProcess, startWorker } from './processes.ts';
import { startRedis } from './redis.ts';
import { KeyedLoad, type KeyedOp, sendKeyed } from './restore-client.ts';
import { auditViolations, createAccounts, createOwner, createQuests } from './seed.ts';

/**
 * The restore drill (`npm run chaos -- --only restore-drill`, and tests/system/restore.test.ts in
 * short): keyed clients load the service on a PostgreSQL archived by pgBackRest; a base backup is
 * taken during the load; more load; an operator's mistaken DELETE of a quest's payouts while the
 * load goes on. The service is stopped, the database restored to a moment before the DELETE,
 * `quest-admin restore prepare` run, the service started on it; then the data directory is
 * destroyed and the database restored to the latest point. Each restore is checked against what
 * the clients were told.
 */

export interface DrillOptions {
  clients: number;
  /** Acknowledged credits to wait for in each phase of the load. */
  perPhase: number;
  workers: number;
  /** Start the service again after the restore to the latest point (the ledger is checked either way). */
  serviceAfterLatest?: boolean;
  log?: (m: string) => void;
}

export interface DrillReport {
  violations: string[];
  /** Credits acknowledged before the recovery target / after it, and of those after it, missing from the restored ledger. */
  pitr: { ackedBefore: number; ackedAfter: number; rewound: number; prepareRewound: number; restoreMs: number };
  latest: { acked: number; lost: number; restoreMs: number };
}

const START_MS = 90_000;

interface Service {
  baseUrl: string;
  procs: ServiceProcess[];
}

export async function runRestoreDrill(opts: DrillOptions): Promise<DrillReport> {
  const log = opts.log ?? (() => {});
  const [pg, redis] = await Promise.all([startArchivedPostgres({ archiveTimeoutS: 1 }), startRedis('aof')]);
  const url = pg.url('quest_restore');
  const conns: Sql[] = [];
  const connect = () => {
    const sql = createSql(url, { max: 2 });
    conns.push(sql);
    return sql;
  };
  let service: Service | undefined;
  const unregister = onExitCleanup(() => {
    for (const p of service?.procs ?? []) p.child.kill('SIGKILL');
  });
  try {
    await migrate(url);
    const sql = connect();
    const owner = await createOwner(sql);
    const questIds = await createQuests(sql, 2, { ownerId: owner.id, totalPoints: 1_000_000_000 });
    const accounts = await createAccounts(sql, 5);
    const env: Record<string, string> = {
      DATABASE_URL: url,
      REDIS_URL: redis.url,
      QUEUE_PREFIX: 'restore',
      QUEUE_PARTITIONS: '2',
      DATABASE_POOL_MAX: '4',
      ALLOCATION_WAIT_MS: '1000',
      RECONCILER_INTERVAL_MS: '500',
      RECONCILER_MIN_AGE_MS: '2000',
      ...UNTHROTTLED_RATE_LIMITS,
    };
    const steps: Steps = {
      ownerId: owner.id,
      apiKey: owner.apiKey,
      questIds,
      connect,
      log,
      baseUrl: () => service!.baseUrl,
      startService: async () => {
        const [api, ...workers] = await Promise.all([
          startApiProcess(env, undefined, START_MS),
          ...Array.from({ length: opts.workers }, (_, i) => startWorker({ ...env, WORKER_ID: `w${i + 1}` }, START_MS)),
        ]);
        service = { baseUrl: api!.baseUrl, procs: [api!.process, ...(workers as ServiceProcess[])] };
      },
      stopService: async () => {
        await Promise.all((service?.procs ?? []).map((p) => p.stop('SIGTERM')));
        service = undefined;
      },
      prepare: () =>
        runCli(['--json', 'restore', 'prepare', '--list', '100000'], {
          env: { ...process.env, ...env, ENV_FILE: '/dev/null' },
          timeoutMs: 60_000,
        }),
    };
    const load = new KeyedLoad({ baseUrl: steps.baseUrl, apiKey: owner.apiKey, questIds, accounts }, 'drill');
    await steps.startService();
    const pitr = await pointInTime(pg, sql, load, opts, steps);
    const latest = await toLatest(pg, load, opts, steps);
    return { violations: [...pitr.violations, ...latest.violations], pitr: pitr.report, latest: latest.report };
  } finally {
    for (const p of service?.procs ?? []) await p.stop('SIGKILL').catch(() => {});
    unregister();
    await Promise.all(conns.map((c) => c.end({ timeout: 1 }).catch(() => {})));
    await Promise.all([pg.stop(), redis.stop()]);
  }
}

interface Steps {
  ownerId: string;
  apiKey: string;
  questIds: number[];
  /** A new pool on the database (a restore ends every connection of the old one). */
  connect(): Sql;
  baseUrl(): string;
  startService(): Promise<void>;
  stopService(): Promise<void>;
  prepare(): ReturnType<typeof runCli>;
  log(m: string): void;
}

async function waitFor(cond: () => boolean | Promise<boolean>, what: string, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`drill: ${what} not within ${timeoutMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** `restore prepare`'s report; a violation when it did not fence. */
async function prepare(steps: Steps, violations: string[]): Promise<{ count: number; keys: string[] }> {
  const run = await steps.prepare();
  let out: {
    rewound?: { count: number; keys: string[] };
    fence?: { done: boolean; keysDeleted?: number };
    recoveryPoint?: { recoveryTarget: string | null };
  } = {};
  try {
    out = JSON.parse(run.stdout);
  } catch {}
  if (run.code !== 0 || !out.fence?.done)
    violations.push(`restore prepare did not fence (exit ${run.code}): ${run.output.slice(0, 300)}`);
  steps.log(
    `restore prepare: recovery target "${out.recoveryPoint?.recoveryTarget}", ${out.rewound?.count} rewound, ${out.fence?.keysDeleted} keys fenced`,
  );
  return out.rewound ?? { count: 0, keys: [] };
}

async function pointInTime(pg: ArchivedPostgres, sql: Sql, load: KeyedLoad, opts: DrillOptions, steps: Steps) {
  const violations: string[] = [];
  load.start(opts.clients);
  await waitFor(() => load.ackedSince(0) >= opts.perPhase, 'first load');
  steps.log(`load running: ${load.ackedSince(0)} acknowledged; base backup`);
  await pg.backup('full');
  const backedUp = Date.now();
  // A time target restores from a backup that stopped more than a second before it (pgBackRest
  // compares whole seconds: setBefore), so the target is taken only once that holds for this one.
  const restorable = () => Date.now() > backedUp + 1000;
  await waitFor(() => load.ackedSince(backedUp) >= opts.perPhase && restorable(), 'load after the backup');
  const target = new Date();
  await waitFor(() => load.ackedSince(target.getTime()) >= opts.perPhase, 'load after the recovery target');
  const deleted = await sql`delete from payouts where quest_id = ${steps.questIds[0]!}`;
  const disasterAt = Date.now();
  steps.log(`mistaken DELETE: ${deleted.count} payouts of quest ${steps.questIds[0]}`);
  await waitFor(() => load.ackedSince(disasterAt) >= opts.perPhase, 'load after the DELETE');
  await load.stop();
  await steps.stopService();
  steps.log('load and service stopped; restoring to the target');
  const restoreMs = await pg.restore({ to: 'time', time: target });
  const prepared = await prepare(steps, violations);
  await steps.startService();
  steps.log('service started on the restored database; clients retry');

  const restored = steps.connect();
  const acked = load.ops.filter((o) => o.outcome === 'completed');
  const before = acked.filter((o) => o.okAt! < target.getTime());
  const after = acked.filter((o) => o.okAt! >= target.getTime());
  const stored = await payoutsByKey(restored, steps.ownerId, after);
  const rewound = after.filter((o) => (stored.get(o.key) ?? []).length === 0);
  const reported = new Set(prepared.keys);
  for (const o of rewound)
    if (!reported.has(idempotentRequestKey(steps.ownerId, o.questId, o.key, 'alc')))
      violations.push(`restore prepare did not report rewound ${o.key}`);
  violations.push(...(await checkLedger(restored, steps.ownerId, before, 'restored, before the retries')));
  violations.push(...(await retryAll(acked, new Set(rewound), steps)));
  violations.push(...(await checkLedger(restored, steps.ownerId, acked, 'restored, after the retries')));
  steps.log(
    `restored to ${target.toISOString()} in ${Math.round(restoreMs)} ms: ${before.length} credits acknowledged before it kept; of ${after.length} after it, ${rewound.length} rewound (re-decided once on retry)`,
  );
  return {
    violations,
    report: {
      ackedBefore: before.length,
      ackedAfter: after.length,
      rewound: rewound.length,
      prepareRewound: prepared.count,
      restoreMs,
    },
  };
}

/**
 * Every client retries every key it was acknowledged, with the same body: the same payout unless
 * the restore rewound it; a rewound one is decided again, and its client told the new payout.
 */
async function retryAll(acked: KeyedOp[], rewound: Set<KeyedOp>, steps: Steps): Promise<string[]> {
  const out: string[] = [];
  const queue = [...acked];
  const worker = async () => {
    for (let op = queue.shift(); op; op = queue.shift()) {
      const retry: KeyedOp = { key: op.key, questId: op.questId, body: op.body };
      await sendKeyed(steps.baseUrl(), steps.apiKey, retry);
      if (retry.outcome !== 'completed') out.push(`retry of ${op.key}: ${retry.outcome}`);
      else if (rewound.has(op)) Object.assign(op, { payoutId: retry.payoutId, okAt: retry.okAt });
      else if (retry.payoutId !== op.payoutId)
        out.push(`retry of ${op.key}: payout ${retry.payoutId}, first told ${op.payoutId}`);
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  return out;
}

async function payoutsByKey(sql: Sql, ownerId: string, ops: readonly KeyedOp[]): Promise<Map<string, string[]>> {
  const keys = ops.map((o) => idempotentRequestKey(ownerId, o.questId, o.key, 'alc'));
  const rows = await sql<{ id: string; request_key: string }[]>`
    select id, request_key from payouts where batch_id is null and request_key = any(${keys}::text[])`;
  const byRequestKey = new Map<string, string[]>();
  for (const r of rows) byRequestKey.set(r.request_key, [...(byRequestKey.get(r.request_key) ?? []), r.id]);
  return new Map(ops.map((o, i) => [o.key, byRequestKey.get(keys[i]!) ?? []]));
}

/** Each acknowledged op stored exactly once, with the payout its client was told; the audit clean. */
async function checkLedger(sql: Sql, ownerId: string, ops: readonly KeyedOp[], when: string): Promise<string[]> {
  const out: string[] = [];
  const stored = await payoutsByKey(sql, ownerId, ops);
  for (const o of ops) {
    if (o.outcome !== 'completed') continue;
    const ids = stored.get(o.key) ?? [];
    if (ids.length !== 1) out.push(`${o.key}: ${ids.length} payouts stored (${when})`);
    else if (ids[0] !== o.payoutId) out.push(`${o.key}: stored ${ids[0]}, client was told ${o.payoutId} (${when})`);
  }
  out.push(...(await auditViolations(sql)).map((v) => `audit (${when}): ${v.kind} ${v.id}`));
  return out;
}

/**
 * More load on the restored database, the last commit archived (within `archive_timeout`), the
 * service stopped and the data directory destroyed; restored to the latest point: nothing
 * acknowledged may be missing.
 */
async function toLatest(pg: ArchivedPostgres, load: KeyedLoad, opts: DrillOptions, steps: Steps) {
  const violations: string[] = [];
  const from = Date.now();
  load.start(opts.clients);
  await waitFor(() => load.ackedSince(from) >= opts.perPhase, 'load on the restored database');
  await load.stop();
  const sql = steps.connect();
  const [current] = await sql<{ segment: string }[]>`select pg_walfile_name(pg_current_wal_lsn()) as segment`;
  await waitFor(async () => {
    const [archived] = await sql<{ last: string | null }[]>`select last_archived_wal as last from pg_stat_archiver`;
    return archived!.last !== null && archived!.last >= current!.segment;
  }, 'the last commit archived');
  steps.log('last commit archived; service stopped, data directory destroyed');
  await steps.stopService();
  await pg.destroyPrimary();
  const restoreMs = await pg.restore({ to: 'latest' });
  await prepare(steps, violations);
  if (opts.serviceAfterLatest !== false) await steps.startService();
  const acked = load.ops.filter((o) => o.outcome === 'completed');
  const found = violations.length;
  violations.push(...(await checkLedger(steps.connect(), steps.ownerId, acked, 'restored to the latest point')));
  const lost = violations.slice(found).filter((v) => v.includes(': 0 payouts stored')).length;
  steps.log(
    `data directory destroyed, restored to the latest point in ${Math.round(restoreMs)} ms: ${acked.length} acknowledged, ${lost} lost`,
  );
  return { violations, report: { acked: acked.length, lost, restoreMs } };
}
