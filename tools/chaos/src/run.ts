import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onExitCleanup } from '@quest/testing/exit';
import { formatAvailability, measureAvailability } from './availability.ts';
import { Cluster } from './cluster.ts';
import { checkInvariants } from './invariants.ts';
import { Load } from './load.ts';
import { answerCounts, type Op } from './ops.ts';
import { type LoadProfile, type Scenario, sleep } from './scenario.ts';
import { checkWebhooks, subscribe } from './webhooks.ts';

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

export const FULL_LOAD: LoadProfile = { clients: 16, warmupMs: 2_000, afterMs: 4_000, creditRows: 400, outageMs: 60_000 };
export const SMALL_LOAD: LoadProfile = { clients: 6, warmupMs: 1_000, afterMs: 2_000, creditRows: 100, outageMs: 10_000 };

export interface ScenarioResult {
  name: string;
  fault: string;
  requests: number;
  /** Of the requests, reversals. */
  reversals: number;
  s200: number;
  s202: number;
  s4xx: number;
  s5xx: number;
  errors: number;
  /** From the fault's injection until requests succeed again and the work pending at the fault is decided. */
  recoveryMs: number | undefined;
  /**
   * Failover scenarios: from the standby's promotion to the first 200 answered to a request sent after
   * the primary died (so decided on the new primary); undefined when none came.
   */
  resumeMs?: number;
  /** Gray-failure scenarios: how soon every partition was served again, and any stall after the heal. */
  availability?: string;
  credit?: string;
  /** Events, deliveries and duplicates, in the scenarios with a webhook receiver. */
  webhooks?: string;
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

/** From `since` to the first 200 answering an attempt sent after `sentAfter`. */
function firstOkAfter(ops: Op[], sentAfter: number, since: number): number | undefined {
  let first: number | undefined;
  for (const op of ops)
    for (const a of op.attempts)
      if (a.status === 200 && a.sentAt > sentAfter && (first === undefined || a.at < first)) first = a.at;
  return first === undefined ? undefined : first - since;
}

/** The moments of a run: load started, fault injected (as the scenario marked it), fault over, load over. */
interface RunTimes {
  warmupFrom: number;
  injectedAt: number;
  faultEnd: number;
  loadEnd: number;
}

function startLoad(cluster: Cluster, s: Scenario, profile: LoadProfile, deadline: () => number): Load {
  const target = {
    baseUrl: () => cluster.baseUrl,
    apiKey: cluster.owner.apiKey,
    ownerId: cluster.owner.id,
    questIds: s.loadQuests?.(cluster) ?? cluster.questIds,
    accounts: cluster.accounts,
  };
  const options = {
    clients: profile.clients,
    batchEvery: 10,
    batchSize: 25,
    unknownEvery: 23,
    keylessEvery: 4,
    httpTimeoutMs: 10_000,
    tag: s.name,
    ...(s.reverseEvery ? { reverseEvery: s.reverseEvery } : {}),
  };
  const load = new Load(target, options, deadline);
  load.start();
  return load;
}

/** `quest-admin credit` of a file of `creditRows` rows, in four batches, through the fault. */
function startCredit(cluster: Cluster, dir: string, profile: LoadProfile): ReturnType<Cluster['admin']> {
  const file = join(dir, 'credits.csv');
  const rows = Array.from(
    { length: profile.creditRows },
    (_, i) => `${cluster.accounts[i % cluster.accounts.length]},${1 + (i % 3)}`,
  );
  writeFileSync(file, `address,points\n${rows.join('\n')}\n`);
  const batchSize = String(Math.ceil(profile.creditRows / 4));
  const args = ['credit', '--quest', String(cluster.creditQuestId), '--key', cluster.owner.apiKey, '--file', file];
  return cluster.admin([...args, '--batch-size', batchSize, '--base-url', cluster.baseUrl], CREDIT_BOUND_MS);
}

/** How the credit run ended: a note for the table, and a violation when it hung or failed without a message. */
async function creditVerdict(credit: ReturnType<Cluster['admin']>, violations: string[], log: (m: string) => void) {
  const r = await credit;
  const line = r.output.trim().split('\n').filter(Boolean).at(-1)?.slice(0, 160) ?? '';
  if (r.hung) {
    violations.push(`quest-admin credit did not end within ${CREDIT_BOUND_MS / 1000} s`);
    return `hung > ${CREDIT_BOUND_MS / 1000} s`;
  }
  if (r.code === 0) return `ok in ${(r.ms / 1000).toFixed(1)} s`;
  if (!line) violations.push('quest-admin credit failed without a message');
  log(`credit ended with exit ${r.code}: ${line}`);
  return `error (exit ${r.code}) in ${(r.ms / 1000).toFixed(1)} s`;
}

/** The load through the fault: warm-up, the credit run, the injection, the load after, every request decided. */
async function loadThroughFault(cluster: Cluster, s: Scenario, profile: LoadProfile, dir: string, log: (m: string) => void) {
  let deadline = Number.POSITIVE_INFINITY;
  const load = startLoad(cluster, s, profile, () => deadline);
  const warmupFrom = Date.now();
  await sleep(profile.warmupMs);
  const credit = s.credit ? startCredit(cluster, dir, profile) : undefined;
  let injectedAt = Date.now();
  log(`injecting: ${s.fault}`);
  await s.inject(cluster, () => (injectedAt = Date.now()), profile);
  const faultEnd = Date.now();
  log(`injected in ${faultEnd - injectedAt} ms; load continues`);
  await sleep(profile.afterMs);
  const loadEnd = Date.now();
  deadline = Date.now() + RESOLVE_BOUND_MS;
  await load.finish();
  log(`load done: ${load.ops.length} requests`);
  const times: RunTimes = { warmupFrom, injectedAt, faultEnd, loadEnd };
  return { ops: load.ops, times, credit };
}

/** After the load: health, crashes, the invariants, the webhooks, availability and failover resumption. */
async function verdict(
  cluster: Cluster,
  s: Scenario,
  run: Awaited<ReturnType<typeof loadThroughFault>>,
  log: (m: string) => void,
) {
  const { ops, times } = run;
  const violations: string[] = [];
  const creditNote = run.credit ? await creditVerdict(run.credit, violations, log) : undefined;
  const healthy = await waitHealthy(cluster);
  if (!healthy.ok) violations.push(`not healthy ${HEALTH_BOUND_MS / 1000} s after the load: ${healthy.why}`);
  violations.push(...cluster.crashes().map((c) => `crash: ${c}`));
  violations.push(...(await checkInvariants(cluster, ops, RESOLVE_BOUND_MS)));
  const checked = cluster.webhooks ? await checkWebhooks(cluster, cluster.webhooks) : undefined;
  if (checked) {
    violations.push(...checked.violations);
    log(`webhooks: ${checked.note}`);
  }
  const availability = s.proxied ? formatAvailability(await measureAvailability(cluster, times)) : undefined;
  if (availability) log(availability);
  const killed = cluster.marks.get('killed');
  const promoted = cluster.marks.get('promoted');
  const resumeMs = killed !== undefined && promoted !== undefined ? firstOkAfter(ops, killed, promoted) : undefined;
  if (promoted !== undefined && resumeMs === undefined)
    violations.push('no request sent after the primary died was answered 200');
  if (promoted !== undefined) log(`first 200 ${resumeMs === undefined ? 'never came' : `${resumeMs} ms after the promotion`}`);
  return {
    name: s.name,
    fault: s.fault,
    ...answerCounts(ops),
    recoveryMs: recovery(ops, times.injectedAt, times.faultEnd),
    resumeMs,
    ...(availability ? { availability } : {}),
    credit: creditNote,
    ...(checked ? { webhooks: checked.note } : {}),
    violations,
  };
}

export async function runScenario(
  s: Scenario,
  profile: LoadProfile,
  log = (m: string) => console.error(m),
  /** Write every request's record (attempts, answers, times) to `<dumpDir>/chaos-<scenario>.json`. */
  dumpDir?: string,
): Promise<ScenarioResult> {
  const started = Date.now();
  const say = (m: string) => log(`[${s.name}] ${m}`);
  const cluster = await Cluster.start({
    workers: s.workers,
    redisPersistence: s.redis,
    postgres: s.postgres,
    firstWorkerEnv: s.firstWorkerEnv,
    ...(s.proxied ? { proxyFirstWorker: true } : {}),
    ...(s.env ? { env: s.env } : {}),
  });
  const dir = mkdtempSync(join(tmpdir(), 'quest-chaos-credit-'));
  const unregister = onExitCleanup(() => rmSync(dir, { recursive: true, force: true }));
  try {
    say(`service up in ${Date.now() - started} ms`);
    if (s.webhooks) cluster.webhooks = await subscribe(cluster, s.webhooks);
    const run = await loadThroughFault(cluster, s, profile, dir, say);
    const result = await verdict(cluster, s, run, say);
    if (dumpDir) {
      const ops = run.ops.map((o) => ({ ...o, payoutIds: [...o.payoutIds], itemPayouts: undefined, itemRejected: undefined }));
      writeFileSync(join(dumpDir, `chaos-${s.name}.json`), JSON.stringify({ injectedAt: run.times.injectedAt, ops }));
    }
    return result;
  } finally {
    await cluster.stop();
    rmSync(dir, { recursive: true, force: true });
    unregister();
    say(`done in ${((Date.now() - started) / 1000).toFixed(1)} s`);
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
