import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { WEBHOOK_QUEUE } from './names.ts';

/**
 * The webhook delivery queue's transport (docs/events.md). A job is one attempt of each delivery
 * of a group (up to WEBHOOK_DELIVERY_BATCH of them), named by the group (`whb-<first id>-<digest of
 * its ids and attempts>`, made by claimDueDeliveries), so handing the same attempts over twice adds
 * one job. The schedule and the outcome live in PostgreSQL; a job is only the order to try now, so
 * it runs once (no BullMQ retries): a failed attempt is rescheduled in PostgreSQL, not in Redis.
 */

export interface DeliveryRef {
  id: number;
  /** The attempt the job is for (1 for the first). */
  attempt: number;
}

export interface DeliveryGroupJob {
  jobId: string;
  deliveries: DeliveryRef[];
}

/** A job's data: the group's deliveries. */
export interface DeliveryJobData {
  deliveries: DeliveryRef[];
}

export class DeliveryQueue {
  readonly queue: Queue;

  constructor(connection: Redis, prefix: string) {
    this.queue = new Queue(WEBHOOK_QUEUE, { connection, prefix });
    this.queue.on('error', () => {});
  }

  /** One job per group, in one round trip. */
  async add(groups: readonly DeliveryGroupJob[], retentionSeconds: number): Promise<void> {
    if (groups.length === 0) return;
    await this.queue.addBulk(
      groups.map((g) => ({
        name: 'deliver',
        data: { deliveries: g.deliveries } satisfies DeliveryJobData,
        opts: {
          jobId: g.jobId,
          attempts: 1,
          removeOnComplete: { age: retentionSeconds },
          removeOnFail: { age: retentionSeconds },
        },
      })),
    );
  }

  /** Jobs waiting or running (each a group of deliveries): how much room is left before the high-water mark. */
  async depth(): Promise<number> {
    const counts = await this.queue.getJobCounts('wait', 'active', 'prioritized', 'delayed');
    return Object.values(counts).reduce((a, b) => a + b, 0);
  }

  /**
   * Whether the job is still in Redis, unfinished. A finished one (its processor threw before
   * recording its attempts, or it did not carry a delivery any more) is removed, so the same
   * attempts can be handed over again under the same id.
   */
  async carries(jobId: string): Promise<boolean> {
    const state = await this.queue.getJobState(jobId);
    if (state === 'waiting' || state === 'active' || state === 'delayed' || state === 'prioritized') return true;
    if (state === 'completed' || state === 'failed') await this.queue.remove(jobId);
    return false;
  }

  close(): Promise<void> {
    return this.queue.close();
  }
}
