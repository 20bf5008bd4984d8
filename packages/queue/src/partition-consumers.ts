import { type Job, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import type { JobHandlers } from '@quest/domain';
import { redisConnection } from './connection.ts';
import { jobProcessor } from './consumer.ts';
import { partitionQueueName } from './names.ts';
import type { PartitionQueues } from './partitions.ts';
import type { ReplySender } from './replies.ts';

export interface PartitionLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export interface PartitionConsumersOptions {
  redisUrl: string;
  prefix: string;
  /** Stored on each job this process runs (`job.processedBy`). */
  memberId: string;
  handlers: JobHandlers;
  replies?: ReplySender;
  logger: PartitionLogger;
  lockDurationMs: number;
  stalledIntervalMs: number;
  /** How long a release or a forced close may take before it is given up on. */
  deadlineMs: number;
  /** How long a partition may sit idle before its backlog is read. */
  idleCheckMs: number;
  stallRestartMs: number;
}

export const delay = (ms: number) => new Promise<'deadline'>((r) => setTimeout(() => r('deadline'), ms).unref());

/**
 * The BullMQ workers of the partitions this process owns, one per partition (concurrency 1, on a
 * connection of its own), and the one place that starts and stops them: a hand-over among healthy
 * members lets the active job finish; a worker that cannot do the work abandons it. It also
 * watches them: when each last started and decided a job, and whether jobs wait, so a partition
 * whose consumer stopped fetching gets a fresh one.
 */
export class PartitionConsumers {
  private readonly processor: ReturnType<typeof jobProcessor>;
  private readonly workers = new Map<number, Worker>();
  /** Each partition worker's own connection (closed after its worker). */
  private readonly connections = new Map<number, Redis>();
  /** Each partition's active job and its lock token, while its handler runs. */
  private readonly active = new Map<number, { job: Job; token: string | undefined }>();
  /** Aborted when the partition's active job is abandoned (see `stop`). */
  private readonly aborts = new Map<number, AbortController>();
  private readonly closing = new Map<number, Promise<void>>();
  /** When each partition last started or finished a job (performance.now()). */
  private readonly lastActivity = new Map<number, number>();
  /** When each partition last finished a job, and whether jobs wait behind it (for the stall gauge). */
  private readonly progress = new Map<number, { decidedAt: number; waiting: boolean }>();
  private stopped = false;
  /** Consumers restarted because their partition stalled. */
  restarts = 0;

  constructor(private readonly opts: PartitionConsumersOptions) {
    this.processor = jobProcessor(opts.handlers, { logger: opts.logger, ...(opts.replies ? { replies: opts.replies } : {}) });
  }

  /** Partitions with a consumer (starting, running). */
  partitions(): number[] {
    return [...this.workers.keys()];
  }

  has(p: number): boolean {
    return this.workers.has(p);
  }

  /** Seconds each partition with waiting jobs has gone without deciding one (0: none waiting). */
  stalledSeconds(): Map<number, number> {
    const now = performance.now();
    const out = new Map<number, number>();
    for (const p of this.workers.keys()) {
      const s = this.progress.get(p);
      out.set(p, s?.waiting ? Math.max(0, (now - s.decidedAt) / 1000) : 0);
    }
    return out;
  }

  async start(p: number): Promise<void> {
    const pendingClose = this.closing.get(p);
    const placeholder = {} as Worker; // reserve the slot so a second heartbeat doesn't start it twice
    this.workers.set(p, placeholder);
    if (pendingClose) await pendingClose;
    if (this.stopped || this.workers.get(p) !== placeholder) return;
    // A connection of its own (BullMQ duplicates it for its blocking reads); a Redis Cluster needs
    // an instance rather than options. BullMQ leaves a given instance open: stop() closes it.
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
      lockDuration: this.opts.lockDurationMs,
      stalledInterval: this.opts.stalledIntervalMs,
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
   * global concurrency 1). `abandon` puts the active job back and stops at once, then tells its
   * handler to give up at its next retry.
   */
  stop(p: number, how: 'finish' | 'abandon'): void {
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
    // rather than make the next owner wait for its lock to lapse and the stalled-job check. With
    // Redis away, the lock lapses (a forced close stops renewing it) and the stalled check does it.
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
            delay(this.opts.deadlineMs),
          ])
        : Promise.resolve();
    const closed = released
      .then(() => worker.close(how === 'abandon'))
      .catch((err) => this.opts.logger.warn({ err, partition: p }, 'worker close failed'));
    // Abandoning: the handler hears it only once BullMQ has stopped (a job failed while BullMQ
    // still held its lock would be recorded failed); a close wedged on a dead connection is not waited for.
    const done = (how === 'abandon' ? Promise.race([closed, delay(this.opts.deadlineMs)]) : closed).then(() => {
      abort?.abort();
      connection?.disconnect();
    });
    this.closing.set(p, done);
    void done.finally(() => {
      if (this.closing.get(p) === done) this.closing.delete(p);
    });
  }

  /**
   * Partitions idle for a while: read their backlog. One with waiting jobs and none active whose
   * consumer has started nothing for `stallRestartMs` gets a fresh consumer.
   */
  async watchStalls(queues: PartitionQueues): Promise<void> {
    const now = performance.now();
    const owned = [...this.workers.keys()];
    const idle = owned.filter((p) => now - (this.lastActivity.get(p) ?? now) > this.opts.idleCheckMs);
    for (const p of owned) if (!idle.includes(p)) this.setWaiting(p, true);
    await Promise.all(
      idle.map(async (p) => {
        const { waiting, active } = await queues.backlog(p);
        this.setWaiting(p, waiting + active > 0);
        const quiet = performance.now() - (this.lastActivity.get(p) ?? now);
        if (waiting > 0 && active === 0 && quiet > this.opts.stallRestartMs && this.workers.get(p) instanceof Worker) {
          this.restarts++;
          this.opts.logger.warn(
            { partition: p, waiting, quietMs: Math.round(quiet) },
            'partition stalled: jobs wait and its consumer fetches none; starting a fresh consumer',
          );
          this.stop(p, 'abandon');
          void this.start(p);
        }
      }),
    );
  }

  private setWaiting(p: number, waiting: boolean) {
    const s = this.progress.get(p);
    if (s) s.waiting = waiting;
  }

  /** Graceful stop: every active job finishes. */
  async close(): Promise<void> {
    this.stopped = true;
    for (const p of [...this.workers.keys()]) this.stop(p, 'finish');
    await Promise.all(this.closing.values());
  }
}
