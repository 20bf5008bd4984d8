import { type Job, Queue, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { redisConnection } from './connection.ts';
import { WEBHOOK_QUEUE } from './names.ts';

/**
 * The webhook delivery queue's transport (docs/events.md). A job is one attempt of one delivery,
 * named by both (`dlv-<id>-<attempt>`), so handing the same attempt over twice adds one job. The
 * schedule and the outcome live in PostgreSQL; a job is only the order to try now, so it runs
 * once (no BullMQ retries): a failed attempt is rescheduled in PostgreSQL, not in Redis.
 */

export interface DeliveryJob {
  deliveryId: number;
  attempt: number;
}

export const deliveryJobId = (d: DeliveryJob) => `dlv-${d.deliveryId}-${d.attempt}`;

export class DeliveryQueue {
  readonly queue: Queue;

  constructor(connection: Redis, prefix: string) {
    this.queue = new Queue(WEBHOOK_QUEUE, { connection, prefix });
    this.queue.on('error', () => {});
  }

  async add(jobs: readonly DeliveryJob[], retentionSeconds: number): Promise<void> {
    if (jobs.length === 0) return;
    await this.queue.addBulk(
      jobs.map((d) => ({
        name: 'deliver',
        data: d,
        opts: {
          jobId: deliveryJobId(d),
          attempts: 1,
          removeOnComplete: { age: retentionSeconds },
          removeOnFail: { age: retentionSeconds },
        },
      })),
    );
  }

  /** Jobs waiting or running: how much room is left before the high-water mark. */
  async depth(): Promise<number> {
    const counts = await this.queue.getJobCounts('wait', 'active', 'prioritized', 'delayed');
    return Object.values(counts).reduce((a, b) => a + b, 0);
  }

  /**
   * Whether the job of this attempt is still in Redis, unfinished. A finished one (its processor
   * threw before recording the attempt) is removed, so the attempt can be handed over again under
   * the same id.
   */
  async carries(d: DeliveryJob): Promise<boolean> {
    const id = deliveryJobId(d);
    const state = await this.queue.getJobState(id);
    if (state === 'waiting' || state === 'active' || state === 'delayed' || state === 'prioritized') return true;
    if (state === 'completed' || state === 'failed') await this.queue.remove(id);
    return false;
  }

  close(): Promise<void> {
    return this.queue.close();
  }
}

/** Run `process` for delivery jobs, `concurrency` at a time in this process. */
export function startDeliveryWorker(opts: {
  redisUrl: string;
  prefix: string;
  concurrency: number;
  lockDurationMs: number;
  name: string;
  process: (job: DeliveryJob) => Promise<void>;
  logger: { warn(obj: object, msg?: string): void };
}): { close(): Promise<void> } {
  const connection = redisConnection(opts.redisUrl);
  connection.on('error', () => {});
  const worker = new Worker(WEBHOOK_QUEUE, (job: Job<DeliveryJob>) => opts.process(job.data), {
    connection,
    prefix: opts.prefix,
    name: opts.name,
    concurrency: opts.concurrency,
    lockDuration: opts.lockDurationMs,
    maxStalledCount: 10,
  });
  worker.on('error', (err) => opts.logger.warn({ err }, 'delivery worker error'));
  return {
    async close() {
      await worker.close();
      connection.disconnect();
    },
  };
}
