import type { Redis } from 'ioredis';
import type { HealthState, JobHandlers } from '@quest/domain';
import type { ReplySender } from '@quest/queue';
import type { ConsumerLogger } from './consumer.ts';

/**
 * What a partition pool (pool.ts) is given. Its timing: the defaults live here and nowhere else
 * (the worker's environment, env.ts, takes its defaults from `POOL_DEFAULTS`), and every period
 * the pool derives from them is derived here.
 */
export interface PoolTiming {
  /** How often membership is renewed, partitions rebalanced and the database probed. */
  heartbeatMs: number;
  /** A member that has not renewed for this long is considered dead. */
  memberTtlMs: number;
  /** BullMQ job lock: a dead worker's active job is taken over this long after its last renewal. */
  lockDurationMs: number;
  /** Deadline of one database probe. */
  probeTimeoutMs: number;
  /**
   * An owned partition with waiting jobs, none active, that has started none for this long gets a
   * fresh consumer: a consumer wedged in a blocking read (seen after a Redis Cluster failover)
   * never holds a partition for longer.
   */
  stallRestartMs: number;
}

export const POOL_DEFAULTS: Readonly<PoolTiming> = Object.freeze({
  heartbeatMs: 1000,
  memberTtlMs: 3000,
  lockDurationMs: 4000,
  probeTimeoutMs: 1000,
  stallRestartMs: 10_000,
});

export interface PoolConfig extends PoolTiming {
  /**
   * BullMQ's stalled-job check period, a quarter of the lock: a dead or fenced worker's job is
   * taken over at most 1.25 locks after its last renewal (one script per owned partition per check).
   */
  stalledIntervalMs: number;
  /** Deadline of each membership command, half a heartbeat: a timed-out renewal is retried at once and still lands before the fence. */
  commandTimeoutMs: number;
  /** A member fences itself this long after its last renewal started: before the TTL lets others in. */
  fenceAfterMs: number;
  /** How long an owned partition may sit idle before its backlog is read. */
  idleCheckMs: number;
}

/** The TTL must leave room for two heartbeats and a half, or a worker fences itself at every beat. */
export const MIN_TTL_HEARTBEATS = 2.5;

/** The defaults with `timing` over them, and the periods derived from the result. */
export function poolConfig(timing: Partial<PoolTiming> = {}): PoolConfig {
  const t = { ...POOL_DEFAULTS, ...timing };
  return {
    ...t,
    stalledIntervalMs: Math.floor(t.lockDurationMs / 4),
    commandTimeoutMs: Math.max(50, Math.floor(t.heartbeatMs / 2)),
    fenceAfterMs: t.memberTtlMs - Math.min(t.heartbeatMs / 2, t.memberTtlMs / 4),
    idleCheckMs: 2 * t.heartbeatMs,
  };
}

export interface PartitionPoolOptions {
  /**
   * A consumer connection (no command timeout, retried forever): the partition queues run on it,
   * and the pool's other connections are duplicates of it. The caller closes it, after close().
   */
  connection: Redis;
  prefix: string;
  partitions: number;
  /** Unique per process; stored on each job it processes (`job.processedBy`). */
  memberId: string;
  /** One handler per job of the catalogue. */
  handlers: JobHandlers;
  /** Delivers each job's reply to the API process waiting for it (none: no replies). */
  replies?: ReplySender;
  logger: ConsumerLogger;
  /** Over POOL_DEFAULTS (config.ts). */
  timing?: Partial<PoolTiming>;
  /**
   * This worker's own path to its database: resolves once a trivial query answered. Probed every
   * heartbeat with a deadline of `timing.probeTimeoutMs`; the answers decide whether the worker
   * stays a member (`nextHealth` in @quest/domain). Absent: the worker is always healthy.
   */
  probe?: () => Promise<void>;
  /**
   * Called after each successful heartbeat (renewed or, while unhealthy, reported out of the pool):
   * a liveness signal that stops when the process hangs or loses Redis. Must not throw.
   */
  onHeartbeat?: (beat: PoolBeat) => void;
  /** Called when the set of live members changed (this one included), e.g. to end departed members' sessions. */
  onMembersChanged?: (members: readonly string[]) => void;
}

export interface PoolBeat {
  at: Date;
  members: number;
  owned: readonly number[];
  /** Whether this worker is a member now; when not, `reason` says why it left. */
  member: boolean;
  reason?: string;
  health: HealthState;
}
