import { readdirSync, readFileSync } from 'node:fs';
import type { Service } from '../services.ts';

/**
 * Where the machine's CPU went during a measured run, from /proc: per service process, per group of
 * PostgreSQL and Redis processes, this bench, and everything else (other people's work on a shared box).
 */

const CLK_TCK = 100;

/**
 * CPU seconds (user+system) of one process, and of its children that exited and were waited for,
 * from /proc/<pid>/stat.
 */
export function cpuSeconds(pid: number | string): { comm: string; cpu: number; exitedChildren: number } | undefined {
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

/**
 * CPU seconds (user+system) of a private PostgreSQL cluster: its postmaster and every process it
 * started (backends, WAL writer, checkpointer, autovacuum), for the cost tools that run one.
 */
export function clusterCpuSeconds(postmaster: number): number {
  let total = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(entry) !== postmaster && Number(f[1]) !== postmaster) continue;
      total += (Number(f[11]) + Number(f[12])) / CLK_TCK;
    } catch {}
  }
  return total;
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

const benchDatabases = new Set<string>();
/**
 * A database of this bench (its own, the obvious-queue peer's), to tell its PostgreSQL backends from
 * those of other users of the server.
 */
export function addBenchDatabase(name: string) {
  benchDatabases.add(name);
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
  if (title.split(/\s+/).some((word) => benchDatabases.has(word))) return BENCH_DB_GROUP;
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
