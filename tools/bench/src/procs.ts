import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import type { Redis } from 'ioredis';
import { masterConnections, membersKey, partitionQueueName } from '@quest/queue';
import { REPO_ROOT } from './infra.ts';

/**
 * The service under test, as real OS processes started from the repo's TypeScript entry points
 * (`node --import tsx …`, like packages/testing's startProcess). With LOG_LEVEL=warn neither
 * process prints its "ready" line (both are info level), so readiness is observed from outside:
 * the API answers GET /readyz on a port chosen here; a worker has joined the pool's membership
 * set in Redis and BullMQ workers cover every partition.
 */

export interface Service {
  role: 'api' | 'worker' | 'reference';
  name: string;
  child: ChildProcess;
  pid: number;
  /** Last ~64 KB of stdout+stderr. */
  output(): string;
  /** Lines written since start that look like pino warn/error/fatal records (level ≥ 40). */
  problems(): string[];
  stop(signal?: NodeJS.Signals): Promise<number | null>;
  exited: Promise<number | null>;
}

const OUTPUT_KEEP = 64 * 1024;

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

const live = new Set<Service>();

/** Entry points: the TypeScript sources through tsx (default) or a compiled bundle (--runtime bundle). */
const entries = {
  api: 'apps/api/src/server.ts',
  worker: 'apps/worker/src/main.ts',
  reference: 'tools/bench/src/reference-server.ts',
  /** quest-admin: its launcher (the TypeScript through tsx unless apps/admin/dist is fresh). */
  admin: 'apps/admin/bin/quest-admin.js',
};
export function useEntries(e: { api: string; worker: string; reference: string; admin: string }) {
  entries.api = e.api;
  entries.worker = e.worker;
  entries.reference = e.reference;
  entries.admin = e.admin;
}

/** The quest-admin entry the CLI scenarios run (relative to the repository root, or absolute). */
export const adminEntry = () => entries.admin;

/** Every child still running (for the Ctrl-C / failure path). */
export function liveServices(): Service[] {
  return [...live];
}

function spawnService(
  role: Service['role'],
  name: string,
  entry: string,
  env: Record<string, string>,
  nodeArgs: string[] = [],
): Service {
  const loader = entry.endsWith('.ts') ? ['--import', 'tsx'] : [];
  const child = spawn(process.execPath, [...nodeArgs, ...loader, entry], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const problems: string[] = [];
  let partial = '';
  const onData = (d: Buffer) => {
    const s = d.toString();
    out = (out + s).slice(-OUTPUT_KEEP);
    partial += s;
    const lines = partial.split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) {
      const m = /"level":(\d+)/.exec(line);
      if ((m && Number(m[1]) >= 40) || (!m && line.trim() && !line.startsWith('{'))) {
        if (problems.length < 200) problems.push(line.slice(0, 2000));
      }
    }
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code, signal) => resolve(code ?? (signal ? -1 : null))),
  );
  const svc: Service = {
    role,
    name,
    child,
    pid: child.pid ?? -1,
    output: () => out,
    problems: () => problems,
    exited,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill(signal);
        const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
        await exited;
        clearTimeout(timer);
      }
      live.delete(svc);
      return exited;
    },
  };
  live.add(svc);
  void exited.then(() => live.delete(svc));
  return svc;
}

async function until<T>(
  what: string,
  svc: Service | undefined,
  timeoutMs: number,
  probe: () => Promise<T | undefined>,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (svc && (svc.child.exitCode !== null || svc.child.signalCode !== null)) {
      throw new Error(`${svc.name} exited before ${what}:\n${svc.output()}`);
    }
    const v = await probe().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${svc ? `:\n${svc.output()}` : ''}`);
    await new Promise((r) => setTimeout(r, 100));
  }
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
 * NODE_OPTIONS, so profiling flags are passed on the command line instead).
 */
export async function startApi(env: ServiceEnv, nodeArgs: string[] = []): Promise<Service & { baseUrl: string }> {
  return startHttp('api', entries.api, env, nodeArgs);
}

/** Start the reference service (reference-server.ts: a plain synchronous Fastify + postgres.js service). */
export async function startReference(env: { DATABASE_URL: string }): Promise<Service & { baseUrl: string }> {
  return startHttp('reference', entries.reference, env, []);
}

async function startHttp(
  role: 'api' | 'reference',
  entry: string,
  env: Record<string, string>,
  nodeArgs: string[],
): Promise<Service & { baseUrl: string }> {
  const port = await freePort();
  const svc = spawnService(role, role, entry, { ...env, HOST: '127.0.0.1', PORT: String(port) }, nodeArgs);
  const baseUrl = `http://127.0.0.1:${port}`;
  try {
    await until(`${role} readiness (GET /readyz)`, svc, 60_000, async () => {
      const res = await fetch(`${baseUrl}/readyz`, { signal: AbortSignal.timeout(2000) });
      await res.arrayBuffer();
      return res.status === 200 ? true : undefined;
    });
  } catch (error) {
    await svc.stop('SIGKILL');
    throw error;
  }
  return Object.assign(svc, { baseUrl });
}

export function startWorkerProcess(env: ServiceEnv, workerId: string, nodeArgs: string[] = []): Service {
  return spawnService('worker', workerId, entries.worker, { ...env, WORKER_ID: workerId }, nodeArgs);
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
    return await until('worker pool to settle', undefined, timeoutMs, async () => {
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

/** Resident set size now and its high-water mark, in MB, from /proc/<pid>/status. */
export function readRss(pid: number): { rssMb: number; hwmMb: number } | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN);
    return { rssMb: kb('VmRSS') / 1024, hwmMb: kb('VmHWM') / 1024 };
  } catch {
    return undefined;
  }
}

/** Samples VmRSS of the given processes every `everyMs`; stop() returns each one's peak. */
export function sampleRss(services: readonly Service[], everyMs = 200) {
  const peak = new Map<string, { pid: number; peakRssMb: number; hwmMb: number; samples: number }>();
  const tick = () => {
    for (const s of services) {
      const r = readRss(s.pid);
      if (!r) continue;
      const cur = peak.get(s.name) ?? { pid: s.pid, peakRssMb: 0, hwmMb: 0, samples: 0 };
      cur.peakRssMb = Math.max(cur.peakRssMb, r.rssMb);
      cur.hwmMb = Math.max(cur.hwmMb, r.hwmMb);
      cur.samples++;
      peak.set(s.name, cur);
    }
  };
  tick();
  const timer = setInterval(tick, everyMs);
  return {
    stop() {
      clearInterval(timer);
      tick();
      return Object.fromEntries(peak);
    },
  };
}

const CLK_TCK = 100;

/**
 * CPU seconds (user+system) of one process, and of its children that exited and were waited for,
 * from /proc/<pid>/stat.
 */
function cpuSeconds(pid: number | string): { comm: string; cpu: number; exitedChildren: number } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const close = stat.lastIndexOf(')');
    const comm = stat.slice(stat.indexOf('(') + 1, close);
    const fields = stat.slice(close + 2).split(' ');
    // fields[0] is state (field 3); utime is field 14, stime field 15, cutime 16, cstime 17.
    return {
      comm,
      cpu: (Number(fields[11]) + Number(fields[12])) / CLK_TCK,
      exitedChildren: (Number(fields[13]) + Number(fields[14])) / CLK_TCK,
    };
  } catch {
    return undefined;
  }
}

export type CpuSnapshot = Map<string, { group: string; cpu: number }>;

/** Busy and total CPU seconds of the whole machine (all CPUs), from /proc/stat. */
export function machineCpu(): { busy: number; total: number } {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0]!;
  const [user, nice, system, idle, iowait, irq, softirq, steal] = line.trim().split(/\s+/).slice(1).map(Number) as number[];
  const busy = user! + nice! + system! + irq! + softirq! + steal!;
  return { busy: busy / CLK_TCK, total: (busy + idle! + iowait!) / CLK_TCK };
}

const OTHER = 'other processes (not this bench)';
const EXITED_CHILDREN = 'exited child processes of the bench (quest-admin CLI runs)';
const OTHER_PG = 'other processes: postgres backends of other databases';

let benchDatabase = '';
/** The bench database's name, to tell its PostgreSQL backends from those of other users of the server. */
export function setBenchDatabase(name: string) {
  benchDatabase = name;
}

/**
 * Which PostgreSQL process: a backend (or autovacuum worker) of the bench database, a shared
 * server process (WAL writer, checkpointer, …, postmaster), or a backend of another database —
 * the server is shared with other people's tests, whose work is not ours.
 */
function postgresGroup(pid: string): string {
  let title = '';
  try {
    title = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim();
  } catch {
    return OTHER_PG;
  }
  if (benchDatabase && title.split(/\s+/).includes(benchDatabase)) return BENCH_DB_GROUP;
  // A parallel query's helper names only its leader backend: it works for the leader's database.
  const leader = /: parallel worker for PID (\d+)/.exec(title)?.[1];
  if (leader) return postgresGroup(leader);
  const shared =
    /: (checkpointer|background writer|walwriter|autovacuum launcher|logical replication launcher|archiver|stats collector|startup|walsender)/;
  if (!title.startsWith('postgres:') || shared.test(title)) return 'postgres (shared: WAL, checkpoints)';
  return OTHER_PG;
}

/**
 * CPU seconds used so far per process, labelled: each named service process, this bench process,
 * every `postgres` process (grouped) and every `redis-server` process (grouped), plus the whole
 * machine's busy time so that what other processes used shows up as its own label. Take the
 * second snapshot before closing any pool whose backends should be counted: processes that exit
 * in between drop out of the delta.
 */
export function cpuSnapshot(services: readonly Service[]): CpuSnapshot {
  const snap: CpuSnapshot = new Map();
  const byPid = new Map(services.map((s) => [String(s.pid), s.name]));
  byPid.set(String(process.pid), 'bench (load generator + limit driver)');
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const c = cpuSeconds(entry);
    if (!c) continue;
    const group =
      byPid.get(entry) ?? (c.comm === 'postgres' ? postgresGroup(entry) : c.comm === 'redis-server' ? 'redis-server' : undefined);
    if (group) snap.set(entry, { group, cpu: c.cpu });
  }
  // Processes the bench ran to completion (the quest-admin CLI of the admin scenario): their CPU
  // moves to the bench's children counters once they exit.
  const self = cpuSeconds(process.pid);
  if (self) snap.set('bench-children', { group: EXITED_CHILDREN, cpu: self.exitedChildren });
  snap.set('machine', { group: OTHER, cpu: machineCpu().busy });
  return snap;
}

/** CPU seconds per label between two snapshots; `other processes` = machine busy time − the labelled ones. */
export function cpuDelta(before: CpuSnapshot, after: CpuSnapshot, relabel?: ReadonlyMap<string, string>): Record<string, number> {
  const out: Record<string, number> = {};
  let known = 0;
  for (const [pid, { group: g, cpu }] of after) {
    if (pid === 'machine') continue;
    const group = relabel?.get(pid) ?? g;
    const d = cpu - (before.get(pid)?.cpu ?? 0);
    if (d > 0) {
      out[group] = (out[group] ?? 0) + d;
      known += d;
    }
  }
  const machine = (after.get('machine')?.cpu ?? 0) - (before.get('machine')?.cpu ?? 0);
  out[OTHER] = Math.max(0, machine - known);
  for (const k of Object.keys(out)) out[k] = Math.round(out[k]! * 100) / 100;
  return out;
}

export const BENCH_DB_GROUP = 'postgres (bench database)';

/** pids of the snapshot that are backends of the bench database. */
export function benchDatabasePids(snap: CpuSnapshot): string[] {
  return [...snap].filter(([, v]) => v.group === BENCH_DB_GROUP).map(([pid]) => pid);
}

/** CPU seconds of everything that is not the bench, the service, its database or Redis. */
export function otherCpu(delta: Record<string, number>): number {
  return Object.entries(delta)
    .filter(([k]) => k.startsWith('other'))
    .reduce((a, [, v]) => a + v, 0);
}

/**
 * Wait (up to maxWaitS) until the machine is quiet: busy below `threshold` of its CPUs over one
 * second. Other people's builds and tests on a shared 2-core box would otherwise be measured as
 * part of the service. Returns the last busy fraction seen and how long it waited.
 */
export async function waitForQuiet(maxWaitS: number, threshold = 0.2): Promise<{ busy: number; waitedS: number }> {
  const start = Date.now();
  for (;;) {
    const a = machineCpu();
    await new Promise((r) => setTimeout(r, 1000));
    const b = machineCpu();
    const busy = (b.busy - a.busy) / Math.max(0.001, b.total - a.total);
    const waitedS = (Date.now() - start) / 1000;
    if (busy < threshold || waitedS >= maxWaitS) return { busy, waitedS };
  }
}

/** Read and write system calls (socket and pipe I/O: read, readv, recv…, write, writev, send…) by role. */
export type IoSnapshot = Map<string, { reads: number; writes: number }>;

/** /proc/<pid>/io's syscr and syscw, undefined when the process is gone or unreadable. */
function ioCalls(pid: number | string): { reads: number; writes: number } | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/io`, 'utf8');
    const reads = /syscr:\s+(\d+)/.exec(text);
    const writes = /syscw:\s+(\d+)/.exec(text);
    return reads && writes ? { reads: Number(reads[1]), writes: Number(writes[1]) } : undefined;
  } catch {
    return undefined;
  }
}

/**
 * I/O system calls of the service's processes by role ("api", "workers", "reference") and of every
 * redis-server. A round trip to Redis or PostgreSQL is one write and at least one read on each
 * side, and on this kind of machine each one costs a context switch: the count per allocation says
 * how many hops a request makes, whatever the machine's speed.
 */
export function ioSnapshot(services: readonly Service[]): IoSnapshot {
  const snap: IoSnapshot = new Map();
  const add = (role: string, v: { reads: number; writes: number } | undefined) => {
    if (!v) return;
    const cur = snap.get(role) ?? { reads: 0, writes: 0 };
    snap.set(role, { reads: cur.reads + v.reads, writes: cur.writes + v.writes });
  };
  for (const s of services) add(s.role === 'worker' ? 'workers' : s.role, ioCalls(s.pid));
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    if (cpuSeconds(entry)?.comm === 'redis-server') add('redis-server', ioCalls(entry));
  }
  return snap;
}

export function ioDelta(before: IoSnapshot, after: IoSnapshot): Record<string, { reads: number; writes: number }> {
  const out: Record<string, { reads: number; writes: number }> = {};
  for (const [role, v] of after) {
    const b = before.get(role) ?? { reads: 0, writes: 0 };
    out[role] = { reads: v.reads - b.reads, writes: v.writes - b.writes };
  }
  return out;
}

/** Commands Redis has executed (summed over a cluster's masters), and how many of them ran a Lua script. */
export async function redisCommandCounts(redis: Redis): Promise<{ commands: number; scripts: number } | undefined> {
  try {
    let commands = 0;
    let scripts = 0;
    for (const node of masterConnections(redis)) {
      const info = await node.info('commandstats');
      for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
        const [, name, calls] = m;
        if (name === 'info') continue; // this count's own command
        commands += Number(calls);
        if (/^(eval|evalsha|eval_ro|evalsha_ro|fcall|fcall_ro)$/.test(name!)) scripts += Number(calls);
      }
    }
    return { commands, scripts };
  } catch {
    return undefined;
  }
}
