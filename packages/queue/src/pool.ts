import type { Redis } from 'ioredis';
import {
  assignPartitions,
  DEFAULT_HEALTH_POLICY,
  type HealthPolicy,
  type HealthState,
  INITIAL_HEALTH,
  type JobHandlers,
  nextHealth,
  type ProbeSample,
} from '@quest/domain';
import { redisConnection } from './connection.ts';
import { healthyPeerLatencies, leaveMembership, renewMembership } from './membership.ts';
import { poolChangedChannel } from './names.ts';
import { delay, PartitionConsumers } from './partition-consumers.ts';
import { PartitionQueues, type QueueSettings } from './partitions.ts';
import type { ReplySender } from './replies.ts';

export interface PoolLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export interface PartitionPoolOptions extends QueueSettings {
  /** Unique per process; stored on each job it processes (`job.processedBy`). */
  memberId: string;
  /** One handler per job of the catalogue. */
  handlers: JobHandlers;
  /** Delivers each job's reply to the API process waiting for it (none: no replies). */
  replies?: ReplySender;
  logger: PoolLogger;
  /** How often membership is renewed and partitions rebalanced. */
  heartbeatMs?: number;
  /** A member that has not renewed for this long is considered dead. */
  memberTtlMs?: number;
  /** BullMQ job lock: a dead worker's active job is taken over this long after its last renewal. */
  lockDurationMs?: number;
  /** BullMQ stalled-job check period. */
  stalledIntervalMs?: number;
  /**
   * This worker's own path to its database: resolves once a trivial query answered. Probed every
   * heartbeat with a deadline of `probeTimeoutMs`; the answers decide whether the worker stays a
   * member (`nextHealth` in @quest/domain). Absent: the worker is always healthy.
   */
  probe?: () => Promise<void>;
  /** Deadline of one probe (default: the heartbeat period). */
  probeTimeoutMs?: number;
  healthPolicy?: HealthPolicy;
  /** Deadline of each membership command (default: the heartbeat period). */
  redisTimeoutMs?: number;
  /**
   * An owned partition with waiting jobs, none active, that has started none for this long gets a
   * fresh consumer (its BullMQ worker is closed and a new one started): a consumer wedged in a
   * blocking read (seen after a Redis Cluster failover) never holds a partition for longer.
   */
  stallRestartMs?: number;
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

/**
 * The worker side of the pipeline. Each partition queue has BullMQ global concurrency 1, so at most
 * one of its jobs is active anywhere and its jobs are decided in enqueue order. On its own BullMQ
 * would let whichever process first grabbed a partition keep it forever (a worker fetches the next
 * job as it finishes one), so the pool does not spread. Here processes *lease* partitions instead:
 * each one heartbeats into a membership set, and partitions are dealt round-robin over the sorted
 * live members (`assignPartitions`). A process runs BullMQ workers only for the partitions it
 * owns; when a member joins, leaves or dies, every process recomputes and hands partitions over
 * within one heartbeat after the change is seen. Order survives a hand-over because the old
 * owner's active job keeps the partition's single active slot until it finishes (or, if the owner
 * died, until its lock expires and BullMQ puts the job back at the *head* of the queue).
 *
 * A member is one that can do the work (docs/operations.md, "Gray failures"):
 * - every heartbeat also probes the worker's database with a deadline; a worker whose probes fail,
 *   or answer far slower than its peers', withdraws from the membership and hands its partitions
 *   over (`nextHealth`), abandoning its active jobs, and rejoins once healthy again;
 * - every membership command has a deadline, and a worker that has not renewed its membership for
 *   `memberTtlMs − fence margin` fences itself: it drops its partitions, abandoning active jobs,
 *   *before* the others can take them (the TTL is the fence), so it never serves a partition it no
 *   longer owns and is not found inside a stale job when it gets the partition back;
 * - an owned partition with waiting jobs that its consumer stopped fetching gets a fresh consumer.
 * Abandoning a job is safe: its lock lapses, BullMQ puts it back at the head of its partition for
 * the next owner, and the ledger's exactly-once rules turn whatever the old attempt still commits
 * into a no-op for the new one.
 */
export class PartitionPool {
  private readonly redis: Redis;
  private readonly queues: PartitionQueues;
  private readonly consumers: PartitionConsumers;
  private timer: NodeJS.Timeout | undefined;
  private fenceTimer: NodeJS.Timeout | undefined;
  private probeTimer: NodeJS.Timeout | undefined;
  private stopped = false;
  private beating = false;
  /** A heartbeat was asked for while one ran: run another right after it. */
  private beatAgain = false;
  /** Whether the last heartbeat left this worker in the membership (to announce a change). */
  private joined: boolean | undefined;
  /** Hears other members announce that they left or joined, so the pool re-deals at once. */
  private readonly subscriber: Redis;
  private probing = false;
  /** performance.now() at the start of the last heartbeat that renewed the membership. */
  private renewedAt = Number.NEGATIVE_INFINITY;
  private peers: number[] = [];
  private lastMembers = '';
  owned: number[] = [];
  /** Live members seen at the last successful heartbeat (this one included). */
  memberCount = 0;
  health: HealthState = INITIAL_HEALTH;
  /** Times this worker fenced itself or withdrew from the pool, by reason. */
  readonly fenced = { redis: 0, unreachable: 0, slow: 0 };

  constructor(private readonly opts: PartitionPoolOptions) {
    // Membership commands fail at their deadline instead of hanging on a blackholed connection.
    this.redis = redisConnection(opts.redisUrl, { commandTimeout: this.redisTimeoutMs });
    this.redis.on('error', () => {});
    this.subscriber = redisConnection(opts.redisUrl);
    this.subscriber.on('error', () => {});
    this.queues = new PartitionQueues(this.redis, opts);
    this.consumers = new PartitionConsumers({
      redisUrl: opts.redisUrl,
      prefix: opts.prefix,
      memberId: opts.memberId,
      handlers: opts.handlers,
      ...(opts.replies ? { replies: opts.replies } : {}),
      logger: opts.logger,
      lockDurationMs: opts.lockDurationMs ?? 4000,
      stalledIntervalMs: opts.stalledIntervalMs ?? 1000,
      deadlineMs: this.redisTimeoutMs,
      idleCheckMs: 2 * this.heartbeatMs,
      stallRestartMs: opts.stallRestartMs ?? 10_000,
    });
  }

  private get heartbeatMs() {
    return this.opts.heartbeatMs ?? 1000;
  }

  private get memberTtlMs() {
    return this.opts.memberTtlMs ?? 3000;
  }

  private get redisTimeoutMs() {
    return this.opts.redisTimeoutMs ?? this.opts.heartbeatMs ?? 1000;
  }

  /** A member fences itself this long after its last renewal started: before the TTL lets others in. */
  private get fenceAfterMs() {
    return this.memberTtlMs - Math.min(this.heartbeatMs / 2, this.memberTtlMs / 4);
  }

  async start(): Promise<void> {
    // The topology here too, so order holds even if no API process has started yet.
    await this.queues.ensureTopology();
    if (this.opts.probe) await this.probeOnce();
    // A member that leaves or joins says so: the others re-deal at once instead of at their next
    // heartbeat (a lost message only costs that heartbeat).
    this.subscriber.on('message', (_channel: string, from: string) => {
      if (from !== this.opts.memberId) this.beatNow();
    });
    // Not awaited: with Redis away it would wait for it (ioredis subscribes again on reconnect).
    void this.subscriber.subscribe(poolChangedChannel(this.opts.prefix)).catch((err: unknown) => {
      this.opts.logger.warn({ err }, 'cannot subscribe to pool changes; re-dealing at heartbeats only');
    });
    await this.heartbeat();
    this.timer = setInterval(() => void this.heartbeat(), this.heartbeatMs);
    this.fenceTimer = setInterval(() => this.checkFence(), Math.max(25, Math.floor(this.heartbeatMs / 4)));
    if (this.opts.probe) this.probeTimer = setInterval(() => void this.probeOnce(), this.heartbeatMs);
  }

  /** Seconds each owned partition with waiting jobs has gone without deciding one (0: none waiting). */
  stalledSeconds(): Map<number, number> {
    return this.consumers.stalledSeconds();
  }

  /** Consumers restarted because their partition stalled. */
  get restarts(): number {
    return this.consumers.restarts;
  }

  /** One database probe with its deadline; its outcome moves the health state. */
  private async probeOnce(): Promise<void> {
    if (this.probing || this.stopped || !this.opts.probe) return;
    this.probing = true;
    const timeoutMs = this.opts.probeTimeoutMs ?? this.heartbeatMs;
    const started = performance.now();
    let sample: ProbeSample;
    try {
      const outcome = await Promise.race([this.opts.probe().then(() => 'answered' as const), delay(timeoutMs)]);
      sample = { ok: outcome === 'answered', latencyMs: performance.now() - started };
      if (!sample.ok) this.opts.logger.warn({ timeoutMs }, 'database probe missed its deadline');
    } catch (err) {
      sample = { ok: false, latencyMs: performance.now() - started };
      this.opts.logger.warn({ err }, 'database probe failed');
    } finally {
      // A probe that hangs past its deadline is left behind (it settles when the network does); the
      // next one starts on time, so a wedged connection keeps counting as failures.
      this.probing = false;
    }
    if (this.stopped) return;
    const before = this.health;
    this.health = nextHealth(before, sample, this.peers, this.opts.healthPolicy ?? DEFAULT_HEALTH_POLICY);
    if (before.member && !this.health.member) {
      this.fenced[this.health.verdict === 'slow' ? 'slow' : 'unreachable']++;
      this.opts.logger.warn(
        { verdict: this.health.verdict, latencyMs: Math.round(this.health.latencyMs), peers: this.peers.map(Math.round) },
        this.health.verdict === 'slow'
          ? 'leaving the pool: the database answers this worker far slower than its peers'
          : 'leaving the pool: the database does not answer this worker',
      );
      // At once, not at the next heartbeat: the partitions' next owner is waiting.
      this.rebalance([], this.memberCount, 'abandon');
      this.beatNow();
    } else if (!before.member && this.health.member) {
      this.opts.logger.info({ latencyMs: Math.round(this.health.latencyMs) }, 'rejoining the pool: the database answers again');
      this.beatNow();
    }
  }

  /** The TTL is the fence: drop every partition before the others may take them over. */
  private checkFence() {
    if (this.stopped || !this.owned.length) return;
    const since = performance.now() - this.renewedAt;
    if (since <= this.fenceAfterMs) return;
    this.fenced.redis++;
    this.opts.logger.warn(
      { sinceRenewalMs: Math.round(since), memberTtlMs: this.memberTtlMs, partitions: this.owned },
      'fenced: pool membership not renewed in time; dropping every partition until it is',
    );
    this.rebalance([], this.memberCount, 'abandon');
  }

  /** A heartbeat now (or right after the one running). */
  private beatNow() {
    if (this.beating) this.beatAgain = true;
    else void this.heartbeat();
  }

  private async heartbeat(): Promise<void> {
    if (this.beating || this.stopped) return;
    this.beating = true;
    const started = performance.now();
    const join = this.health.member;
    const report = `${this.health.latencyMs.toFixed(1)}|${join ? this.health.verdict : 'out'}`;
    try {
      const { members, reports } = await renewMembership(this.redis, this.opts.prefix, {
        memberId: this.opts.memberId,
        ttlMs: this.memberTtlMs,
        join,
        report,
      });
      if (this.stopped) return;
      // A reply later than the fence point renews nothing the others have not already reclaimed.
      if (join && performance.now() - started <= this.fenceAfterMs) this.renewedAt = started;
      this.memberCount = members.length;
      this.peers = healthyPeerLatencies(members, reports, this.opts.memberId);
      const key = [...members].sort().join('\n');
      if (key !== this.lastMembers) {
        this.lastMembers = key;
        this.opts.onMembersChanged?.(members);
      }
      const member = join && this.health.member && this.renewedAt === started;
      // Among healthy members a partition's active job finishes before the hand-over; a worker
      // that cannot do the work abandons it.
      this.rebalance(
        member ? assignPartitions(members, this.opts.memberId, this.opts.partitions) : [],
        members.length,
        member ? 'finish' : 'abandon',
      );
      if (this.joined !== join) {
        void this.redis.publish(poolChangedChannel(this.opts.prefix), this.opts.memberId).catch(() => {});
      }
      this.joined = join;
      if (member) {
        await this.consumers
          .watchStalls(this.queues)
          .catch((err: unknown) => this.opts.logger.warn({ err }, 'stall check failed'));
      }
      this.opts.onHeartbeat?.({
        at: new Date(),
        members: members.length,
        owned: this.owned,
        member,
        ...(member ? {} : { reason: `left the pool: ${this.health.verdict === 'healthy' ? 'rejoining' : this.health.verdict}` }),
        health: this.health,
      });
    } catch (error) {
      this.opts.logger.warn({ err: error, timeoutMs: this.redisTimeoutMs }, 'membership heartbeat failed');
    } finally {
      this.beating = false;
      if (this.beatAgain && !this.stopped) {
        this.beatAgain = false;
        setImmediate(() => void this.heartbeat());
      }
    }
  }

  private rebalance(target: number[], memberCount: number, drop: 'finish' | 'abandon') {
    const want = new Set(target);
    const gone = this.consumers.partitions().filter((p) => !want.has(p));
    const add = target.filter((p) => !this.consumers.has(p));
    if (!gone.length && !add.length) return;
    for (const p of gone) this.consumers.stop(p, drop);
    for (const p of add) void this.consumers.start(p);
    this.owned = [...target];
    this.opts.logger.info({ memberId: this.opts.memberId, members: memberCount, partitions: target }, 'partitions rebalanced');
  }

  /** Graceful stop: leave the membership (others take over at once), finish active jobs, disconnect. */
  async close(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    clearInterval(this.fenceTimer);
    clearInterval(this.probeTimer);
    await leaveMembership(this.redis, this.opts.prefix, this.opts.memberId).catch(() => {});
    await this.redis.publish(poolChangedChannel(this.opts.prefix), this.opts.memberId).catch(() => {});
    this.subscriber.disconnect();
    await this.consumers.close();
    await this.queues.close();
    this.redis.disconnect();
  }
}
