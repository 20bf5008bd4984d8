import type { Redis } from 'ioredis';
import { assignPartitions, type HealthState, INITIAL_HEALTH, nextHealth } from '@quest/domain';
import { duplicateConnection, PartitionQueues, poolChangedChannel } from '@quest/queue';
import { type PartitionPoolOptions, type PoolConfig, poolConfig } from './config.ts';
import { PartitionConsumers } from './consumers.ts';
import { healthyPeerLatencies, leaveMembership, membershipConnection, renewMembership } from './membership.ts';
import { DatabaseProbe } from './probe.ts';
import { jobProcessor } from './processor.ts';
import { Serial } from './serial.ts';

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
 *   `fenceAfterMs` (config.ts) fences itself: it drops its partitions, abandoning active jobs,
 *   *before* the others can take them (the TTL is the fence), so it never serves a partition it no
 *   longer owns and is not found inside a stale job when it gets the partition back;
 * - an owned partition with waiting jobs that its consumer stopped fetching gets a fresh consumer.
 * Abandoning a job is safe: its lock lapses, BullMQ puts it back at the head of its partition for
 * the next owner, and the ledger's exactly-once rules turn whatever the old attempt still commits
 * into a no-op for the new one.
 */
export class PartitionPool {
  private readonly config: PoolConfig;
  /** Membership commands, with a deadline: they fail at it instead of hanging on a blackholed connection. */
  private readonly redis: ReturnType<typeof membershipConnection>;
  /** Hears other members announce that they left or joined, so the pool re-deals at once. */
  private readonly subscriber: Redis;
  private readonly queues: PartitionQueues;
  private readonly consumers: PartitionConsumers;
  private readonly probe: DatabaseProbe | undefined;
  private readonly beats = new Serial(() => this.heartbeat());
  private readonly probes = new Serial(() => this.probeOnce());
  private readonly stallChecks = new Serial(() => this.watchStalls());
  private timer: NodeJS.Timeout | undefined;
  /** Fires `fenceAfterMs` after the last renewal started, unless another renewal came first. */
  private fenceTimer: NodeJS.Timeout | undefined;
  private stopped = false;
  private failedBeats = 0;
  /** Whether the last heartbeat announced this worker in the membership (a change is published). */
  private joined: boolean | undefined;
  /** performance.now() at the start of the last heartbeat that renewed the membership. */
  private renewedAt = Number.NEGATIVE_INFINITY;
  private peers: number[] = [];
  private lastMembers = '';
  owned: number[] = [];
  /** Live members seen at the last successful heartbeat (this one included). */
  memberCount = 0;
  private inPool = false;
  health: HealthState = INITIAL_HEALTH;
  /** Times this worker fenced itself or withdrew from the pool, by reason. */
  readonly fenced = { redis: 0, unreachable: 0, slow: 0 };

  constructor(private readonly opts: PartitionPoolOptions) {
    this.config = poolConfig(opts.timing);
    this.redis = membershipConnection(duplicateConnection(opts.connection, { commandTimeout: this.config.commandTimeoutMs }));
    this.redis.on('error', () => {});
    this.subscriber = duplicateConnection(opts.connection);
    this.subscriber.on('error', () => {});
    // The queues wait for Redis like any consumer (no deadline): the topology at start-up must not
    // fail on a slow connect.
    this.queues = new PartitionQueues(opts.connection, opts);
    this.consumers = new PartitionConsumers({
      connection: opts.connection,
      prefix: opts.prefix,
      memberId: opts.memberId,
      processor: jobProcessor(opts.handlers, { logger: opts.logger, ...(opts.replies ? { replies: opts.replies } : {}) }),
      logger: opts.logger,
      lockDurationMs: this.config.lockDurationMs,
      stalledIntervalMs: this.config.stalledIntervalMs,
      deadlineMs: this.config.commandTimeoutMs,
      idleCheckMs: this.config.idleCheckMs,
      stallRestartMs: this.config.stallRestartMs,
    });
    this.probe = opts.probe && new DatabaseProbe(opts.probe, this.config.probeTimeoutMs, opts.logger);
  }

  async start(): Promise<void> {
    // The topology here too, so order holds even if no API process has started yet.
    await this.queues.ensureTopology();
    if (this.probe) await this.probes.run();
    // A member that leaves or joins says so: the others re-deal at once instead of at their next
    // heartbeat (a lost message only costs that heartbeat).
    this.subscriber.on('message', (_channel: string, from: string) => {
      if (from !== this.opts.memberId) this.beats.again();
    });
    // Not awaited: with Redis away it would wait for it (ioredis subscribes again on reconnect).
    void this.subscriber.subscribe(poolChangedChannel(this.opts.prefix)).catch((err: unknown) => {
      this.opts.logger.warn({ err }, 'cannot subscribe to pool changes; re-dealing at heartbeats only');
    });
    await this.beats.run();
    this.timer = setInterval(() => {
      void this.beats.run();
      if (this.probe) void this.probes.run();
    }, this.config.heartbeatMs);
  }

  /** Seconds each owned partition with waiting jobs has gone without deciding one (0: none waiting). */
  stalledSeconds(): Map<number, number> {
    return this.consumers.stalledSeconds();
  }

  /** Whether this worker serves its partitions now (a member, not fenced). */
  get isMember(): boolean {
    return this.inPool;
  }

  /** Consumers restarted because their partition stalled. */
  get restarts(): number {
    return this.consumers.restarts;
  }

  /** One database probe; its outcome moves the health state. */
  private async probeOnce(): Promise<void> {
    if (this.stopped || !this.probe) return;
    const sample = await this.probe.sample();
    if (this.stopped) return;
    const before = this.health;
    this.health = nextHealth(before, sample, this.peers);
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
      this.beats.again();
    } else if (!before.member && this.health.member) {
      this.opts.logger.info({ latencyMs: Math.round(this.health.latencyMs) }, 'rejoining the pool: the database answers again');
      this.beats.again();
    }
  }

  /** The TTL is the fence: drop every partition before the others may take them over. */
  private armFence() {
    clearTimeout(this.fenceTimer);
    const left = this.renewedAt + this.config.fenceAfterMs - performance.now();
    this.fenceTimer = setTimeout(() => this.fence(), Math.max(0, left));
  }

  private fence() {
    if (this.stopped || !this.owned.length) return;
    const since = performance.now() - this.renewedAt;
    if (since <= this.config.fenceAfterMs) return this.armFence();
    this.fenced.redis++;
    this.inPool = false;
    // Announce the rejoin when the membership is renewed again.
    this.joined = false;
    this.opts.logger.warn(
      { sinceRenewalMs: Math.round(since), memberTtlMs: this.config.memberTtlMs, partitions: this.owned },
      'fenced: pool membership not renewed in time; dropping every partition until it is',
    );
    this.rebalance([], this.memberCount, 'abandon');
  }

  /** The stall check, beside the heartbeat rather than inside it (its reads must not delay a renewal). */
  private async watchStalls() {
    if (this.stopped) return;
    try {
      await this.consumers.watchStalls(this.queues);
    } catch (err) {
      this.opts.logger.warn({ err }, 'stall check failed');
    }
  }

  private async heartbeat(): Promise<void> {
    if (this.stopped) return;
    const started = performance.now();
    const join = this.health.member;
    const report = `${this.health.latencyMs.toFixed(1)}|${join ? this.health.verdict : 'out'}`;
    try {
      const { members, reports } = await renewMembership(this.redis, this.opts.prefix, {
        memberId: this.opts.memberId,
        ttlMs: this.config.memberTtlMs,
        join,
        report,
      });
      if (this.stopped) return;
      // A reply later than the fence point renews nothing the others have not already reclaimed.
      if (join && performance.now() - started <= this.config.fenceAfterMs) {
        this.renewedAt = started;
        this.armFence();
      }
      this.failedBeats = 0;
      this.beaten(members, reports, join && this.health.member && this.renewedAt === started, join);
    } catch (error) {
      this.opts.logger.warn({ err: error, timeoutMs: this.config.commandTimeoutMs }, 'membership heartbeat failed');
      // Once at once (a lost reply must not cost a whole period before the fence), then at the
      // heartbeat's pace while Redis stays away.
      if (this.failedBeats++ === 0) this.beats.again();
    }
  }

  /** What a heartbeat that reached Redis changes: the peers, the deal, the announcement, the signal. */
  private beaten(members: string[], reports: string[], member: boolean, join: boolean) {
    this.memberCount = members.length;
    this.peers = healthyPeerLatencies(members, reports, this.opts.memberId);
    const key = [...members].sort().join('\n');
    if (key !== this.lastMembers) {
      this.lastMembers = key;
      this.opts.onMembersChanged?.(members);
    }
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
    this.inPool = member;
    if (member) void this.stallChecks.run();
    this.opts.onHeartbeat?.({
      at: new Date(),
      members: members.length,
      owned: this.owned,
      member,
      ...(member ? {} : { reason: `left the pool: ${this.health.verdict === 'healthy' ? 'rejoining' : this.health.verdict}` }),
      health: this.health,
    });
  }

  private rebalance(target: number[], memberCount: number, drop: 'finish' | 'abandon') {
    if (!this.consumers.deal(target, drop)) return;
    this.owned = [...target];
    this.opts.logger.info({ memberId: this.opts.memberId, members: memberCount, partitions: target }, 'partitions rebalanced');
  }

  /** Graceful stop: leave the membership (others take over at once), finish active jobs, disconnect. */
  async close(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    clearTimeout(this.fenceTimer);
    await leaveMembership(this.redis, this.opts.prefix, this.opts.memberId).catch(() => {});
    await this.redis.publish(poolChangedChannel(this.opts.prefix), this.opts.memberId).catch(() => {});
    this.subscriber.disconnect();
    await this.consumers.close();
    await this.queues.close();
    this.redis.disconnect();
  }
}
