import { type Job, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { JobAbandoned } from '@quest/domain';
import { duplicateConnection, partitionQueueName } from '@quest/queue';
import type { jobProcessor } from './processor.ts';

export interface ConsumerLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

/** What every partition's consumer of a process shares. */
export interface ConsumerSettings {
  /** The pool's connection: each consumer runs on a duplicate of its own. */
  connection: Redis;
  prefix: string;
  /** Stored on each job this process runs (`job.processedBy`). */
  memberId: string;
  processor: ReturnType<typeof jobProcessor>;
  logger: ConsumerLogger;
  lockDurationMs: number;
  stalledIntervalMs: number;
  /** How long a release or a forced close may take before it is given up on. */
  deadlineMs: number;
}

interface ActiveJob {
  job: Job;
  token: string | undefined;
  /** Resolves once the handler has settled (returned, thrown, or given up as abandoned). */
  settled: Promise<void>;
}

export const delay = (ms: number) => new Promise<'deadline'>((r) => setTimeout(() => r('deadline'), ms).unref());

/**
 * The BullMQ worker of one partition (concurrency 1, on a connection of its own) and how it stops:
 * `finish` lets the active job finish, `abandon` gives it up and puts it back at the head of its
 * partition. `onActivity` hears each job start (false) and end (true).
 */
export class PartitionConsumer {
  readonly worker: Worker;
  private readonly connection: Redis;
  /** Aborted (with `JobAbandoned`) when the active job is abandoned. */
  private readonly abort = new AbortController();
  private active: ActiveJob | undefined;
  /** While a `finish` waits for the active job: turns it into an abandonment. */
  private escalation: (() => void) | undefined;

  constructor(
    readonly partition: number,
    private readonly s: ConsumerSettings,
    onActivity: (decided: boolean) => void,
  ) {
    // A connection of its own (BullMQ duplicates it for its blocking reads); BullMQ leaves a given
    // instance open: dispose() closes it.
    this.connection = duplicateConnection(s.connection);
    this.connection.on('error', () => {});
    this.worker = new Worker(partitionQueueName(partition), (job, token) => this.run(job, token), {
      connection: this.connection,
      prefix: s.prefix,
      name: s.memberId,
      concurrency: 1,
      lockDuration: s.lockDurationMs,
      stalledInterval: s.stalledIntervalMs,
      maxStalledCount: 10,
      // Business rejections are results; failures are retried inside the processor. A BullMQ
      // retry would move the job behind its successors and break order.
    });
    this.worker.on('active', () => onActivity(false));
    this.worker.on('completed', () => onActivity(true));
    this.worker.on('error', (err) => s.logger.warn({ err, partition }, 'worker error'));
    this.worker.on('failed', (job, err) => {
      onActivity(true);
      s.logger.error({ err, partition, jobId: job?.id }, 'job failed');
    });
  }

  private async run(job: Job, token?: string): Promise<unknown> {
    let settle!: () => void;
    const active: ActiveJob = { job, token, settled: new Promise<void>((r) => (settle = r)) };
    this.active = active;
    try {
      // A job handed to a consumer already abandoned (fetched as the previous one finished) is
      // not started: its lock lapses and the next owner runs it.
      if (this.abort.signal.aborted) throw new JobAbandoned();
      return await this.s.processor(job, this.abort.signal);
    } catch (error) {
      // Abandoned: its next owner decides it and answers. Settle never: while BullMQ still held
      // the lock, a rejection would record the job failed; a closed worker does not wait for it.
      if (error instanceof JobAbandoned) return new Promise<never>(() => {});
      throw error;
    } finally {
      settle();
      if (this.active === active) this.active = undefined;
    }
  }

  /** Let the active job finish, then stop; `escalate()` meanwhile abandons it instead. */
  async finish(): Promise<void> {
    let escalated!: () => void;
    const escalation = new Promise<void>((r) => (escalated = r));
    this.escalation = () => {
      this.escalation = undefined;
      void this.release().then(escalated);
    };
    await Promise.race([this.worker.close().catch((err) => this.closeFailed(err)), escalation]);
  }

  /** Turn a `finish` under way into an abandonment (none under way: nothing). */
  escalate(): void {
    this.escalation?.();
  }

  /**
   * No next job and no more lock renewals (a forced close), the handler told to give up (it starts
   * no new attempt and writes no plan once told: `JobContext.signal`), then the job put back at the
   * head of its partition.
   */
  async abandon(): Promise<void> {
    const closed = this.worker.close(true).catch((err) => this.closeFailed(err));
    await this.release();
    await Promise.race([closed, delay(this.s.deadlineMs)]);
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
  private async release(): Promise<void> {
    const active = this.active;
    this.abort.abort(new JobAbandoned());
    if (!active) return;
    const settled = await Promise.race([active.settled.then(() => true), delay(this.s.lockDurationMs / 4).then(() => false)]);
    if (!active.token) return;
    const putBack = active.job.moveToWait(active.token).then(
      () =>
        this.s.logger.info(
          { partition: this.partition, jobId: active.job.id, handlerSettled: settled },
          'abandoned job put back at the head of its partition',
        ),
      () => {},
    );
    await Promise.race([putBack, delay(this.s.deadlineMs)]);
  }

  /** Once stopped: its errors (renewing a lock it gave up, a dead connection) are nobody's concern any more. */
  dispose(): void {
    // A listener stays, or an 'error' event with none would throw.
    this.worker.removeAllListeners('error');
    this.worker.on('error', () => {});
    this.connection.disconnect();
  }

  private closeFailed(err: unknown) {
    this.s.logger.warn({ err, partition: this.partition }, 'worker close failed');
  }
}
