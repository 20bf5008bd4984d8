import type { Redis } from 'ioredis';
import { masterConnections, membersKey, partitionQueueName } from '@quest/queue';
import { UNTHROTTLED_RATE_LIMITS } from '@quest/testing/limits';
import { ENTRIES, type ServiceProcess, type SpawnOptions, spawnProcess, startHttpProcess } from '@quest/testing/processes';
import { until } from '@quest/testing/wait';

/**
 * The service under test, as real OS processes (the shared launchers of @quest/testing). With
 * LOG_LEVEL=warn neither process prints its "ready" line (both are info level), so readiness is
 * observed from outside: the API answers GET /readyz on a port chosen here; a worker has joined
 * the pool's membership set in Redis and BullMQ workers cover every partition.
 */

export interface Service extends ServiceProcess {
  role: 'api' | 'worker' | 'reference' | 'peer';
  name: string;
}

/** A long run's logs: keep the last 64 KB; a process that ignores SIGTERM is killed after 20 s. */
const BENCH_PROCESS: SpawnOptions = { keepOutput: 64 * 1024, killAfterMs: 20_000 };

const live = new Set<Service>();

/** Entry points: the TypeScript sources through tsx (default) or a compiled bundle (--runtime bundle). */
const entries = {
  api: ENTRIES.api as string,
  worker: ENTRIES.worker as string,
  reference: 'tools/bench/src/reference-server.ts',
  peerApi: 'tools/bench/src/peer-api.ts',
  peerWorker: 'tools/bench/src/peer-worker.ts',
  admin: ENTRIES.admin as string,
};
export function useEntries(e: typeof entries) {
  Object.assign(entries, e);
}

/** The quest-admin entry the CLI scenarios run (relative to the repository root, or absolute). */
export const adminEntry = () => entries.admin;

/** Every child still running (for the Ctrl-C / failure path). */
export function liveServices(): Service[] {
  return [...live];
}

function track<T extends ServiceProcess>(proc: T, role: Service['role'], name: string): T & Service {
  const svc = Object.assign(proc, { role, name });
  live.add(svc);
  void svc.exited.then(() => live.delete(svc));
  return svc;
}

export interface ServiceEnv {
  DATABASE_URL: string;
  REDIS_URL: string;
  QUEUE_PREFIX: string;
  QUEUE_PARTITIONS: string;
  LOG_LEVEL: string;
  [k: string]: string;
}

/**
 * Start the API. `nodeArgs` go before the entry (e.g. --cpu-prof: Node 20 refuses it in
 * NODE_OPTIONS, so profiling flags are passed on the command line instead). Its rate limits are
 * set out of the way (a scenario's `env` may set its own): the bench is one client address and
 * one key pushing as hard as it can, which is what the defaults exist to refuse.
 */
export async function startApi(env: ServiceEnv, nodeArgs: string[] = []): Promise<Service & { baseUrl: string }> {
  const withLimits = { ...UNTHROTTLED_RATE_LIMITS, ...env };
  return track(await startHttpProcess(entries.api, withLimits, { ...BENCH_PROCESS, nodeArgs, name: 'api' }), 'api', 'api');
}

/** Start the reference service (reference-server.ts: a plain synchronous Fastify + postgres.js service). */
export async function startReference(env: { DATABASE_URL: string }): Promise<Service & { baseUrl: string }> {
  return track(await startHttpProcess(entries.reference, env, { ...BENCH_PROCESS, name: 'reference' }), 'reference', 'reference');
}

/**
 * Start the obvious-queue peer (peer-api.ts, peer-worker.ts): its worker, then its API, ready
 * once /readyz says the queue has a worker. Env: DATABASE_URL, REDIS_URL, PEER_PREFIX.
 */
export async function startPeerProcesses(env: {
  DATABASE_URL: string;
  REDIS_URL: string;
  PEER_PREFIX: string;
}): Promise<{ api: Service & { baseUrl: string }; worker: Service }> {
  const worker = track(spawnProcess(entries.peerWorker, env, BENCH_PROCESS), 'peer', 'peer-worker');
  try {
    const api = await startHttpProcess(entries.peerApi, env, { ...BENCH_PROCESS, name: 'peer-api' });
    return { api: track(api, 'peer', 'peer-api'), worker };
  } catch (error) {
    await worker.stop('SIGKILL');
    throw new Error(`${(error as Error).message}\npeer worker output:\n${worker.output()}`);
  }
}

export function startWorkerProcess(env: ServiceEnv, workerId: string, nodeArgs: string[] = []): Service {
  return track(spawnProcess(entries.worker, { ...env, WORKER_ID: workerId }, { ...BENCH_PROCESS, nodeArgs }), 'worker', workerId);
}

/** BullMQ names a worker's Redis connections `${prefix}:${base64(queue)}:w:${workerName}`. */
function workerClients(clientList: string, prefix: string): Map<string, Set<string>> {
  const byQueue = new Map<string, Set<string>>();
  for (const line of clientList.split('\n')) {
    const m = / name=(\S+)/.exec(line);
    if (!m) continue;
    const name = m[1]!;
    if (!name.startsWith(`${prefix}:`)) continue;
    const rest = name.slice(prefix.length + 1);
    const w = rest.indexOf(':w:');
    if (w < 0) continue;
    const queue = Buffer.from(rest.slice(0, w), 'base64').toString();
    const worker = rest.slice(w + 3);
    let set = byQueue.get(queue);
    if (!set) byQueue.set(queue, (set = new Set()));
    set.add(worker);
  }
  return byQueue;
}

/**
 * Wait until exactly `workerIds` are the pool's members and every partition queue has exactly
 * one BullMQ worker, owned by one of them, with all of them owning some partition: the pool has
 * settled after a (re)start. Returns the owner of each partition.
 */
export async function waitForPool(
  redis: Redis,
  prefix: string,
  partitions: number,
  workerIds: readonly string[],
  services: readonly Service[],
  timeoutMs = 60_000,
): Promise<Map<number, string>> {
  const want = new Set(workerIds);
  let last = '';
  try {
    return await until('worker pool to settle', timeoutMs, async () => {
      for (const s of services) {
        if (s.child.exitCode !== null || s.child.signalCode !== null) throw new Error(`${s.name} exited:\n${s.output()}`);
      }
      const members = await redis.zrange(membersKey(prefix), 0, -1);
      if (members.length !== want.size || members.some((m) => !want.has(m))) {
        last = `members=${members.join(',')}`;
        return undefined;
      }
      // On a cluster each master lists the connections made to it.
      const lists = await Promise.all(masterConnections(redis).map((n) => n.client('LIST') as Promise<string>));
      const clients = workerClients(lists.join('\n'), prefix);
      const owners = new Map<number, string>();
      for (let p = 0; p < partitions; p++) {
        const set = clients.get(partitionQueueName(p));
        if (set?.size !== 1) {
          last = `partition ${p} has ${set?.size ?? 0} workers`;
          return undefined;
        }
        const [owner] = set;
        if (!want.has(owner!)) return undefined;
        owners.set(p, owner!);
      }
      const used = new Set(owners.values());
      if (used.size !== Math.min(want.size, partitions)) {
        last = `owners=${[...used].join(',')}`;
        return undefined;
      }
      return owners;
    });
  } catch (error) {
    throw new Error(`${(error as Error).message} (last state: ${last})`);
  }
}
