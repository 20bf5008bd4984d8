import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';

/**
 * The worker's liveness file, for container healthchecks (the worker serves no HTTP of its own).
 *
 * After each successful renewal of its pool membership in Redis the worker rewrites the file with
 * the renewal time and its membership TTL. The healthcheck (`healthcheck.ts`) is healthy only while
 * the last renewal is younger than that TTL, i.e. while the rest of the pool still counts this
 * worker as a member. A worker whose event loop hangs, that is frozen, or that cannot reach Redis
 * stops renewing, drops out of the pool (its partitions move) and turns unhealthy at the same
 * moment; merely reaching PostgreSQL and Redis over TCP is not enough.
 */

export interface HealthRecord {
  memberId: string;
  pid: number;
  /** When the membership was last renewed (ISO 8601). */
  renewedAt: string;
  /** A member that has not renewed for this long is dead to the pool. */
  memberTtlMs: number;
  members: number;
  partitions: readonly number[];
  /** Set while the worker is out of the pool (it cannot do the work): why. Unhealthy then. */
  out?: string;
}

/** Write atomically (temp file + rename), so a reader never sees half a record. */
export function writeHealthFile(path: string, record: HealthRecord): void {
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(record)}\n`);
  renameSync(tmp, path);
}

/** On a graceful stop: the worker has left the pool, so it is no longer healthy. */
export function removeHealthFile(path: string): void {
  rmSync(path, { force: true });
}

export type HealthVerdict = { healthy: true; ageMs: number; record: HealthRecord } | { healthy: false; reason: string };

/**
 * Judge a liveness file at `now`. `maxAgeMs` overrides the TTL recorded in the file. A clock that
 * went backwards (renewal in the future) counts as fresh.
 */
export function checkHealthFile(path: string, now: number, maxAgeMs?: number): HealthVerdict {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return {
      healthy: false,
      reason:
        code === 'ENOENT'
          ? `no liveness file at ${path}: the worker has not joined the pool (or has left it)`
          : `cannot read ${path}: ${code ?? String(error)}`,
    };
  }
  let record: HealthRecord;
  try {
    record = JSON.parse(text) as HealthRecord;
  } catch {
    return { healthy: false, reason: `${path} is not a liveness record` };
  }
  const renewed = Date.parse(record?.renewedAt);
  if (!Number.isFinite(renewed) || !Number.isFinite(record.memberTtlMs)) {
    return { healthy: false, reason: `${path} is not a liveness record` };
  }
  const limit = maxAgeMs ?? record.memberTtlMs;
  const ageMs = Math.max(0, now - renewed);
  if (ageMs > limit) {
    return {
      healthy: false,
      reason: `pool membership of ${record.memberId} last renewed ${ageMs} ms ago (limit ${limit} ms): the worker is hung or cannot reach Redis`,
    };
  }
  if (record.out) return { healthy: false, reason: `${record.memberId} is out of the pool: ${record.out}` };
  return { healthy: true, ageMs, record };
}
