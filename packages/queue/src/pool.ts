import { Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { assignPartitions, type JobHandlers } from '@quest/domain';
import { redisConnection } from './connection.ts';
import { jobProcessor } from './consumer.ts';
import { membersKey, partitionQueueName } from './names.ts';
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
   * Called after each successful renewal of this member's membership (a liveness signal: it stops
   * when the process hangs or loses Redis). Must not throw.
   */
  onHeartbeat?: (beat: { at: Date; members: number; owned: readonly number[] }) => void;
}

/**
 * Registers the member and returns the live members, atomically and on Redis's clock (so clock
 * skew between hosts does not matter): members are a sorted set scored by their expiry time.
 */
const HEARTBEAT_SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if ARGV[3] == '1' then redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1]) end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
return redis.call('ZRANGE', KEYS[1], 0, -1)
`;

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
 */
export class PartitionPool {
  private readonly redis: Redis;
  private readonly processor: ReturnType<typeof jobProcessor>;
  private readonly workers = new Map<number, Worker>();
  /** Each partition worker's own connection (closed after its worker). */
  private readonly connections = new Map<number, Redis>();
  private readonly closing = new Map<number, Promise<void>>();
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private beating = false;
  owned: number[] = [];
  /** Live members seen at the last successful heartbeat (this one included). */
  memberCount = 0;

  constructor(private readonly opts: PartitionPoolOptions) {
    this.redis = redisConnection(opts.redisUrl);
    this.redis.on('error', () => {});
    this.processor = jobProcessor(opts.handlers, { logger: opts.logger, ...(opts.replies ? { replies: opts.replies } : {}) });
  }

  private get heartbeatMs() {
    return this.opts.heartbeatMs ?? 1000;
  }

  async start(): Promise<void> {
    // The topology here too, so order holds even if no API process has started yet.
    const queues = new PartitionQueues(this.redis, this.opts);
    try {
      await queues.ensureTopology();
    } finally {
      await queues.close();
    }
    await this.heartbeat();
    this.timer = setInterval(() => void this.heartbeat(), this.heartbeatMs);
  }

  private async heartbeat(): Promise<void> {
    if (this.beating || this.stopped) return;
    this.beating = true;
    try {
      const members = (await this.redis.eval(
        HEARTBEAT_SCRIPT,
        1,
        membersKey(this.opts.prefix),
        this.opts.memberId,
        String(this.opts.memberTtlMs ?? 3000),
        '1',
      )) as string[];
      if (this.stopped) return;
      this.memberCount = members.length;
      this.rebalance(assignPartitions(members, this.opts.memberId, this.opts.partitions), members.length);
      this.opts.onHeartbeat?.({ at: new Date(), members: members.length, owned: this.owned });
    } catch (error) {
      this.opts.logger.warn({ err: error }, 'membership heartbeat failed');
    } finally {
      this.beating = false;
    }
  }

  private rebalance(target: number[], memberCount: number) {
    const want = new Set(target);
    const drop = [...this.workers.keys()].filter((p) => !want.has(p));
    const add = target.filter((p) => !this.workers.has(p));
    if (!drop.length && !add.length) return;
    for (const p of drop) this.stopPartition(p);
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
    const worker = new Worker(partitionQueueName(p), this.processor, {
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
    worker.on('error', (err) => this.opts.logger.warn({ err, partition: p }, 'worker error'));
    worker.on('failed', (job, err) => this.opts.logger.error({ err, partition: p, jobId: job?.id }, 'job failed'));
    this.workers.set(p, worker);
    this.connections.set(p, connection);
  }

  private stopPartition(p: number) {
    const worker = this.workers.get(p);
    const connection = this.connections.get(p);
    this.workers.delete(p);
    this.connections.delete(p);
    if (!worker || !(worker instanceof Worker)) return;
    // close() lets the active job finish; the next owner cannot start a job of this partition
    // before that anyway (global concurrency 1).
    const done = worker
      .close()
      .catch((err) => this.opts.logger.warn({ err, partition: p }, 'worker close failed'))
      .finally(() => connection?.disconnect());
    this.closing.set(p, done);
    void done.finally(() => {
      if (this.closing.get(p) === done) this.closing.delete(p);
    });
  }

  /** Graceful stop: leave the membership (others take over at once), finish active jobs, disconnect. */
  async close(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.redis.zrem(membersKey(this.opts.prefix), this.opts.memberId).catch(() => {});
    for (const p of [...this.workers.keys()]) this.stopPartition(p);
    await Promise.all(this.closing.values());
    this.redis.disconnect();
  }
}
