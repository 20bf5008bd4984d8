import type { Redis } from 'ioredis';
import { membersKey } from '@quest/queue';
import type { ServiceProcess } from './processes.ts';

/**
 * What a worker process says about itself (its JSON log lines, LOG_LEVEL=info) and whether the
 * pool the workers form has settled: shared by the system tests and the fault suite.
 */

/** The latest JSON log line of a process that carries `msg`, parsed (a line still being written is skipped). */
export function lastLogLine(proc: ServiceProcess, msg: string): Record<string, unknown> | undefined {
  const lines = proc.output().split('\n');
  for (let i = lines.length - 1; i >= 0; i--) {
    if (!lines[i]!.includes(`"msg":"${msg}"`)) continue;
    try {
      return JSON.parse(lines[i]!) as Record<string, unknown>;
    } catch {}
  }
  return undefined;
}

/** A worker process's id: its pool member id, and `processedBy` of the jobs it ran (from its "worker started" line). */
export function workerId(worker: ServiceProcess): string {
  const id = lastLogLine(worker, 'worker started')?.workerId;
  if (typeof id !== 'string') throw new Error(`no worker id in the output of a worker:\n${worker.output().slice(-2000)}`);
  return id;
}

/** The partitions a worker process owns by its latest "partitions rebalanced" line ([] before its first). */
export function ownedPartitions(worker: ServiceProcess): number[] {
  return (lastLogLine(worker, 'partitions rebalanced')?.partitions as number[] | undefined) ?? [];
}

/** The member count of a worker's latest rebalance (undefined before its first). */
export function rebalancedMembers(worker: ServiceProcess): number | undefined {
  return lastLogLine(worker, 'partitions rebalanced')?.members as number | undefined;
}

/**
 * Why the pool has not settled on `workers` yet, or undefined once it has: the membership set in
 * Redis holds `members` live entries (default: one per worker) and each of `workers` has rebalanced
 * for that many members, so partitions are spread and no partition is owned twice over.
 */
export async function poolUnsettled(
  redis: Redis,
  prefix: string,
  workers: readonly ServiceProcess[],
  members = workers.length,
): Promise<string | undefined> {
  const now = Number((await redis.time())[0]) * 1000;
  const live = await redis.zcount(membersKey(prefix), now, '+inf');
  if (live !== members) return `${live} live members in Redis, expected ${members}`;
  const behind = workers.map(rebalancedMembers).filter((seen) => seen !== members);
  if (behind.length) return `${behind.length} worker(s) last rebalanced for ${behind.join(', ')} members, expected ${members}`;
  return undefined;
}
