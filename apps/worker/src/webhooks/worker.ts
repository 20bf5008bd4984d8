import { type Job, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { type DeliveryGroupJob, type DeliveryJobData, duplicateConnection, WEBHOOK_QUEUE } from '@quest/queue';

/**
 * Run `process` for delivery jobs, `concurrency` jobs at a time in this process, on a duplicate of
 * `connection` of its own (the caller closes `connection`; close() closes the duplicate).
 */
export function startDeliveryWorker(opts: {
  connection: Redis;
  prefix: string;
  concurrency: number;
  lockDurationMs: number;
  name: string;
  process: (job: DeliveryGroupJob) => Promise<void>;
  logger: { warn(obj: object, msg?: string): void };
}): { close(): Promise<void> } {
  const connection = duplicateConnection(opts.connection);
  connection.on('error', () => {});
  const worker = new Worker(
    WEBHOOK_QUEUE,
    (job: Job<DeliveryJobData>) => opts.process({ jobId: job.id!, deliveries: job.data.deliveries }),
    {
      connection,
      prefix: opts.prefix,
      name: opts.name,
      concurrency: opts.concurrency,
      lockDuration: opts.lockDurationMs,
      // A job is moved back to wait on the second stalled check that finds it unlocked: with
      // BullMQ's default 30 s interval, a killed worker's deliveries waited up to a minute beyond
      // their lock (the fault suite's SIGKILL scenario saw them unrecorded 60 s after its load).
      stalledInterval: opts.lockDurationMs,
      maxStalledCount: 10,
    },
  );
  worker.on('error', (err) => opts.logger.warn({ err }, 'delivery worker error'));
  return {
    async close() {
      await worker.close();
      connection.disconnect();
    },
  };
}
