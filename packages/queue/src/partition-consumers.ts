import { type Job, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { JobAbandoned, type JobHandlers } from '@quest/domain';
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

interface ActiveJob {
  job: Job;
  token: string | undefined;
  /** Resolves once the handler has settled (returned, thrown, or given up as abandoned). */
  settled: Promise<void>;
}

interface Consumer {
  worker: Worker;
  connection: Redis;
  /** Aborted (with `JobAbandoned`) when the active job is abandoned. */
  abort: AbortController;
  active: ActiveJob | undefined;
  /** While a `finish` stop waits for the active job: turn it into an abandonment. */
  escalate?: () => void;
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
  /** The consumer of each partition this process owns (`starting` until its worker exists). */
  private readonly consumers = new Map<number, Consumer | 'starting'>();
  /** Consumers being stopped, until they are: a partition starts again only after. */
  private readonly closing = new Map<number, { consumer: Consumer; done: Promise<void> }>();
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
    return [...this.consumers.keys()];
  }

  has(p: number): boolean {
    return this.consumers.has(p);
  }

  /** Seconds each partition with waiting jobs has gone without deciding one (0: none waiting). */
  stalledSeconds(): Map<number, number> {
    const now = performance.now();
    const out = new Map<number, number>();
    for (const p of this.consumers.keys()) {
      const s = this.progress.get(p);
      out.set(p, s?.waiting ? Math.max(0, (now - s.decidedAt) / 1000) : 0);
    }
    return out;
  }

  async start(p: number): Promise<void> {
    const pendingClose = this.closing.get(p);
    this.consumers.set(p, 'starting'); // so a second heartbeat does not start it twice
    if (pendingClose) await pendingClose.done;
    if (this.stopped || this.consumers.get(p) !== 'starting') return;
    // A connection of its own (BullMQ duplicates it for its blocking reads); a Redis Cluster needs
    // an instance rather than options. BullMQ leaves a given instance open: stop() closes it.
    const connection = redisConnection(this.opts.redisUrl);
    connection.on('error', () => {});
    const consumer = { connection, abort: new AbortController(), active: undefined } as unknown as Consumer;
    const run = async (job: Job, token?: string) => {
      let settle!: () => void;
      const active: ActiveJob = { job, token, settled: new Promise<void>((r) => (settle = r)) };
      consumer.active = active;
      try {
        // A job handed to a consumer already abandoned (fetched as the previous one finished) is
        // not started: its lock lapses and the next owner runs it.
        if (consumer.abort.signal.aborted) throw new JobAbandoned();
        return await this.processor(job, consumer.abort.signal);
      } catch (error) {
        // Abandoned: its next owner decides it and answers. Settle never: while BullMQ still held
        // the lock, a rejection would record the job failed; a closed worker does not wait for it.
        if (error instanceof JobAbandoned) return new Promise<never>(() => {});
        throw error;
      } finally {
        settle();
        if (consumer.active === active) consumer.active = undefined;
      }
    };
    consumer.worker = new Worker(partitionQueueName(p), run, {
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
    const { worker } = consumer;
    worker.on('active', touch(false));
    worker.on('completed', touch(true));
    worker.on('error', (err) => this.opts.logger.warn({ err, partition: p }, 'worker error'));
    worker.on('failed', (job, err) => {
      touch(true)();
      this.opts.logger.error({ err, partition: p, jobId: job?.id }, 'job failed');
    });
    this.consumers.set(p, consumer);
  }

  /**
   * Stop consuming partition p. `finish` lets the active job finish first (a hand-over among
   * healthy members: the next owner cannot start a job of this partition before that anyway,
   * global concurrency 1); `abandonAll` can still turn it into an abandonment. `abandon`: see
   * `abandon`.
   */
  stop(p: number, how: 'finish' | 'abandon'): void {
    const consumer = this.consumers.get(p);
    this.consumers.delete(p);
    this.lastActivity.delete(p);
    this.progress.delete(p);
    if (!consumer || consumer === 'starting') return;
    const done = (how === 'finish' ? this.finish(p, consumer) : this.abandon(p, consumer)).finally(() => {
      // Its errors (renewing a lock it gave up, a dead connection) are nobody's concern any more;
      // a listener stays, or an 'error' event with none would throw.
      consumer.worker.removeAllListeners('error');
      consumer.worker.on('error', () => {});
      consumer.connection.disconnect();
    });
    this.closing.set(p, { consumer, done });
    void done.finally(() => {
      if (this.closing.get(p)?.done === done) this.closing.delete(p);
    });
  }

  /** Drop every partition, abandoning active jobs, and abandon those still finishing (leaving the pool, fenced). */
  abandonAll(): void {
    for (const p of this.partitions()) this.stop(p, 'abandon');
    for (const { consumer } of this.closing.values()) consumer.escalate?.();
  }

  private async finish(p: number, c: Consumer): Promise<void> {
    let escalated!: () => void;
    const escalation = new Promise<void>((r) => (escalated = r));
    c.escalate = () => {
      c.escalate = undefined;
      void this.release(p, c).then(escalated);
    };
    await Promise.race([
      c.worker.close().catch((err) => this.opts.logger.warn({ err, partition: p }, 'worker close failed')),
      escalation,
    ]);
  }

  /**
   * Abandon partition p's consumer: no next job and no more lock renewals (a forced close), the
   * handler told to give up (it starts no new attempt and writes no plan once told:
   * `JobContext.signal`), then the job put back at the head of its partition.
   */
  private async abandon(p: number, c: Consumer): Promise<void> {
    const closed = c.worker.close(true).catch((err) => this.opts.logger.warn({ err, partition: p }, 'worker close failed'));
    await this.release(p, c);
    await Promise.race([closed, delay(this.opts.deadlineMs)]);
  }

  /**
   * Tell the active job's handler to give up, give it a moment to let go (an attempt that reaches
   * its commit meanwhile rolls back: `JobContext.signal`), then put the job back at the head of its
   * partition (BullMQ's moveToWait: RPUSH where workers pop, only while this worker's lock token
   * holds) rather than make the next owner wait for the lock to lapse. An attempt still in flight
   * (stuck on a dead connection) writes no plan once told; one whose writes were sent before holds
   * the quest's row lock until it commits or is ended (departed members' transactions are ended),
   * and whoever decides the quest next then conflicts with it and replays it (migration 00010:
   * one decision per key) — so the next owner running the job beside it costs a retry, never a
   * second decision.
   */
  private async release(p: number, c: Consumer): Promise<void> {
    const active = c.active;
    c.abort.abort(new JobAbandoned());
    if (!active) return;
    const settled = await Promise.race([active.settled.then(() => true), delay(this.opts.lockDurationMs / 4).then(() => false)]);
    if (!active.token) return;
    await Promise.race([
      active.job.moveToWait(active.token).then(
        () =>
          this.opts.logger.info(
            { partition: p, jobId: active.job.id, handlerSettled: settled },
            'abandoned job put back at the head of its partition',
          ),
        () => {},
      ),
      delay(this.opts.deadlineMs),
    ]);
  }

  /**
   * Partitions idle for a while: read their backlog. One with waiting jobs and none active whose
   * consumer has started nothing for `stallRestartMs` gets a fresh consumer.
   */
  async watchStalls(queues: PartitionQueues): Promise<void> {
    const now = performance.now();
    const owned = this.partitions();
    const idle = owned.filter((p) => now - (this.lastActivity.get(p) ?? now) > this.opts.idleCheckMs);
    for (const p of owned) if (!idle.includes(p)) this.setWaiting(p, true);
    await Promise.all(
      idle.map(async (p) => {
        const { waiting, active } = await queues.backlog(p);
        this.setWaiting(p, waiting + active > 0);
        const quiet = performance.now() - (this.lastActivity.get(p) ?? now);
        const consumer = this.consumers.get(p);
        if (waiting > 0 && active === 0 && quiet > this.opts.stallRestartMs && consumer && consumer !== 'starting') {
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
    for (const p of this.partitions()) this.stop(p, 'finish');
    await Promise.all([...this.closing.values()].map((c) => c.done));
  }
}
