import { readdirSync, readFileSync } from 'node:fs';
import type { Redis } from 'ioredis';
import { masterConnections } from '@quest/queue';
import type { Service } from '../services.ts';
import { cpuSeconds } from './cpu.ts';

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
