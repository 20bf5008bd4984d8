import { type Job, Worker } from 'bullmq';
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
import { jobProcessor } from './consumer.ts';
import { healthKey, membersKey, partitionQueueName, poolChangedChannel } from './names.ts';
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
 * Renews (ARGV[3] = 1) or withdraws (0) the member and records its health report, then returns the
 * live members and the fresh reports of every worker, atomically and on Redis's clock (so clock
 * skew between hosts does not matter): members are a sorted set scored by their expiry time;
 * reports (`<redis ms>|<latency ms>|<verdict>`) a hash whose stale fields are dropped here.
 */
const HEARTBEAT_SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
if ARGV[3] == '1' then redis.call('ZADD', KEYS[1], now + ttl, ARGV[1]) else redis.call('ZREM', KEYS[1], ARGV[1]) end
redis.call('HSET', KEYS[2], ARGV[1], now .. '|' .. ARGV[4])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local all = redis.call('HGETALL', KEYS[2])
local reports = {}
for i = 1, #all, 2 do
  local at = tonumber(string.match(all[i + 1], '^(%d+)|'))
  if at == nil or at < now - ttl then
    redis.call('HDEL', KEYS[2], all[i])
  else
    table.insert(reports, all[i])
    table.insert(reports, all[i + 1])
  end
end
return { redis.call('ZRANGE', KEYS[1], 0, -1), reports }
`;

/** The smoothed latencies of the other live members whose last report says healthy. */
export function healthyPeerLatencies(members: readonly string[], reports: readonly string[], self: string): number[] {
  const live = new Set(members);
  const peers: number[] = [];
  for (let i = 0; i + 1 < reports.length; i += 2) {
    const [, latency, verdict] = reports[i + 1]!.split('|');
    if (reports[i] !== self && live.has(reports[i]!) && verdict === 'healthy') peers.push(Number(latency));
  }
  return peers.filter(Number.isFinite);
}

const delay = (ms: number) => new Promise<'deadline'>((r) => setTimeout(() => r('deadline'), ms).unref());

/** Pool members alive now (heartbeat not expired), on Redis's clock. */
export async function liveMembers(redis: Redis, prefix: string): Promise<number> {
  const [seconds, micros] = await redis.time();
  return redis.zcount(membersKey(prefix), Number(seconds) * 1000 + Math.floor(Number(micros) / 1000), '+inf');
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
  private readonly processor: ReturnType<typeof jobProcessor>;
  private readonly workers = new Map<number, Worker>();
  /** Each partition worker's own connection (closed after its worker). */
  private readonly connections = new Map<number, Redis>();
  /** Each partition's active job and its lock token, while its handler runs. */
  private readonly active = new Map<number, { job: Job; token: string | undefined }>();
  /** Aborted when the pool abandons the partition's active job (see `stopPartition`). */
  private readonly aborts = new Map<number, AbortController>();
  private readonly closing = new Map<number, Promise<void>>();
  /** When each owned partition last started or finished a job (performance.now()). */
  private readonly lastActivity = new Map<number, number>();
  /** When each owned partition last finished a job, and whether jobs wait behind it (for the stall gauge). */
  private readonly progress = new Map<number, { decidedAt: number; waiting: boolean }>();
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
  /** Consumers restarted because their partition stalled. */
  restarts = 0;

  constructor(private readonly opts: PartitionPoolOptions) {
    // Membership commands fail at their deadline instead of hanging on a blackholed connection.
    this.redis = redisConnection(opts.redisUrl, { commandTimeout: this.redisTimeoutMs });
    this.redis.on('error', () => {});
    this.subscriber = redisConnection(opts.redisUrl);
    this.subscriber.on('error', () => {});
    this.queues = new PartitionQueues(this.redis, opts);
    this.processor = jobProcessor(opts.handlers, { logger: opts.logger, ...(opts.replies ? { replies: opts.replies } : {}) });
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
    const now = performance.now();
    const out = new Map<number, number>();
    for (const p of this.owned) {
      const s = this.progress.get(p);
      out.set(p, s?.waiting ? Math.max(0, (now - s.decidedAt) / 1000) : 0);
    }
    return out;
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
      const [members, reports] = (await this.redis.eval(
        HEARTBEAT_SCRIPT,
        2,
        membersKey(this.opts.prefix),
        healthKey(this.opts.prefix),
        this.opts.memberId,
        String(this.memberTtlMs),
        join ? '1' : '0',
        report,
      )) as [string[], string[]];
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
      if (member) await this.watchStalls().catch((err: unknown) => this.opts.logger.warn({ err }, 'stall check failed'));
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

  /**
   * Owned partitions idle for a while: read their backlog. One with waiting jobs and none active
   * whose consumer has started nothing for `stallRestartMs` gets a fresh consumer.
   */
  private async watchStalls() {
    const now = performance.now();
    const restartAfter = this.opts.stallRestartMs ?? 10_000;
    const idle = this.owned.filter((p) => now - (this.lastActivity.get(p) ?? now) > 2 * this.heartbeatMs);
    for (const p of this.owned) if (!idle.includes(p)) this.setWaiting(p, true);
    await Promise.all(
      idle.map(async (p) => {
        const { waiting, active } = await this.queues.backlog(p);
        this.setWaiting(p, waiting + active > 0);
        const quiet = performance.now() - (this.lastActivity.get(p) ?? now);
        if (waiting > 0 && active === 0 && quiet > restartAfter && this.workers.get(p) instanceof Worker) {
          this.restarts++;
          this.opts.logger.warn(
            { partition: p, waiting, quietMs: Math.round(quiet) },
            'partition stalled: jobs wait and its consumer fetches none; starting a fresh consumer',
          );
          this.stopPartition(p, 'abandon');
          void this.startPartition(p);
        }
      }),
    );
  }

  private setWaiting(p: number, waiting: boolean) {
    const s = this.progress.get(p);
    if (s) s.waiting = waiting;
  }

  private rebalance(target: number[], memberCount: number, drop: 'finish' | 'abandon') {
    const want = new Set(target);
    const gone = [...this.workers.keys()].filter((p) => !want.has(p));
    const add = target.filter((p) => !this.workers.has(p));
    if (!gone.length && !add.length) return;
    for (const p of gone) this.stopPartition(p, drop);
    for (const p of add) void this.startPartition(p);
    this.owned = [...target];
    this.opts.logger.info({ memberId: this.opts.memberId, members: memberCount, partitions: target }, 'partitions rebalanced');
  }

  private async startPartition(p: number) {
    const pendingClose = this.closing.get(p);
    const placeholder = {} as Worker; // reserve the slot so a second heartbeat doesn't start it twice
    this.workers.set(p, placeholder);
    if (pendingClose) await pendingClose;
    if (this.stopped || this.workers.get(p) !== placeholder) return;
    const lockDuration = this.opts.lockDurationMs ?? 4000;
    // A connection of its own (BullMQ duplicates it for its blocking reads); a Redis Cluster needs
    // an instance rather than options. BullMQ leaves a given instance open: stopPartition closes it.
    const connection = redisConnection(this.opts.redisUrl);
    connection.on('error', () => {});
    const abort = new AbortController();
    const run = async (job: Job, token?: string) => {
      this.active.set(p, { job, token });
      try {
        return await this.processor(job, abort.signal);
      } finally {
        if (this.active.get(p)?.job === job) this.active.delete(p);
      }
    };
    const worker = new Worker(partitionQueueName(p), run, {
      connection,
      prefix: this.opts.prefix,
      name: this.opts.memberId,
      concurrency: 1,
      lockDuration,
      stalledInterval: this.opts.stalledIntervalMs ?? 2000,
      maxStalledCount: 10,
      // Business rejections are results; failures are retried inside the processor. A BullMQ
      // retry would move the job behind its successors and break order.
    });
    const now = performance.now();
    this.lastActivity.set(p, now);
    this.progress.set(p, { decidedAt: now, waiting: false });
    const touch = (decided: boolean) => () => {
      const at = performance.now();
      this.lastActivity.set(p, at);
      if (decided) this.progress.set(p, { decidedAt: at, waiting: this.progress.get(p)?.waiting ?? false });
    };
    worker.on('active', touch(false));
    worker.on('completed', touch(true));
    worker.on('error', (err) => this.opts.logger.warn({ err, partition: p }, 'worker error'));
    worker.on('failed', (job, err) => {
      touch(true)();
      this.opts.logger.error({ err, partition: p, jobId: job?.id }, 'job failed');
    });
    this.workers.set(p, worker);
    this.connections.set(p, connection);
    this.aborts.set(p, abort);
  }

  /**
   * Stop consuming partition p. `finish` lets the active job finish first (a hand-over among
   * healthy members: the next owner cannot start a job of this partition before that anyway,
   * global concurrency 1). `abandon` stops renewing the active job's lock at once, then tells its
   * handler to give up at its next retry: the job's lock lapses and the next owner runs it again.
   */
  private stopPartition(p: number, how: 'finish' | 'abandon') {
    const worker = this.workers.get(p);
    const connection = this.connections.get(p);
    const abort = this.aborts.get(p);
    const active = this.active.get(p);
    this.workers.delete(p);
    this.connections.delete(p);
    this.aborts.delete(p);
    this.active.delete(p);
    this.lastActivity.delete(p);
    this.progress.delete(p);
    if (!worker || !(worker instanceof Worker)) return;
    // Abandoning with Redis reachable: put the active job back at the head of its partition at once
    // (BullMQ's moveToWait: RPUSH where workers pop, only while this worker's lock token holds),
    // rather than make the next owner wait for its lock to lapse and the stalled-job check.
    const released =
      how === 'abandon' && active?.token
        ? Promise.race([
            active.job.moveToWait(active.token).then(
              () =>
                this.opts.logger.info(
                  { partition: p, jobId: active.job.id },
                  'abandoned job put back at the head of its partition',
                ),
              () => {},
            ),
            delay(this.redisTimeoutMs),
          ])
        : Promise.resolve();
    const closed = released
      .then(() => worker.close(how === 'abandon'))
      .catch((err) => this.opts.logger.warn({ err, partition: p }, 'worker close failed'));
    // Abandoning: the handler hears it only once BullMQ has stopped (a job failed while BullMQ
    // still held its lock would be recorded failed); a close wedged on a dead connection is not waited for.
    const done = (how === 'abandon' ? Promise.race([closed, delay(this.heartbeatMs)]) : closed).then(() => {
      abort?.abort();
      connection?.disconnect();
    });
    this.closing.set(p, done);
    void done.finally(() => {
      if (this.closing.get(p) === done) this.closing.delete(p);
    });
  }

  /** Graceful stop: leave the membership (others take over at once), finish active jobs, disconnect. */
  async close(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    clearInterval(this.fenceTimer);
    clearInterval(this.probeTimer);
    await Promise.all([
      this.redis.zrem(membersKey(this.opts.prefix), this.opts.memberId).catch(() => {}),
      this.redis.hdel(healthKey(this.opts.prefix), this.opts.memberId).catch(() => {}),
    ]);
    await this.redis.publish(poolChangedChannel(this.opts.prefix), this.opts.memberId).catch(() => {});
    this.subscriber.disconnect();
    for (const p of [...this.workers.keys()]) this.stopPartition(p, 'finish');
    await Promise.all(this.closing.values());
    await this.queues.close();
    this.redis.disconnect();
  }
}
