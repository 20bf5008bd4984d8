import type { Job } from 'bullmq';
import {
  isJobName,
  JobAbandoned,
  type JobContext,
  type JobHandlers,
  type JobName,
  type JobReply,
  JOBS,
  replyAddressSchema,
} from '@quest/domain';
import { partitionOfQueueName, type ReplySender } from '@quest/queue';

export interface ConsumerLogger {
  warn(obj: object, msg?: string): void;
}

type AnyHandler = (data: unknown, job: JobContext) => Promise<unknown>;

/**
 * The BullMQ processor of every partition worker: find the job's handler in the catalogue, parse its
 * data with the catalogue's schema, run it, and send the typed reply (`{ ok: true, result }`, or
 * `{ ok: false, reason }` when the handler threw) to the API process waiting for it. The handlers
 * never see BullMQ: they get the data and a `JobContext`.
 */
export function jobProcessor(handlers: JobHandlers, deps: { replies?: ReplySender; logger: ConsumerLogger }) {
  /** Send the reply without holding up the partition: the next job need not wait for it. */
  const reply = (job: Job, message: JobReply<JobName>) => {
    const to = replyAddressSchema.safeParse((job.data as { reply?: unknown } | undefined)?.reply);
    if (!to.success || !deps.replies) return;
    deps.replies
      .send(to.data, message)
      .catch((err: unknown) =>
        deps.logger.warn({ err, jobId: job.id, replyTo: to.data.to }, 'reply not delivered; the API reads the database instead'),
      );
  };

  return async (job: Job, signal?: AbortSignal): Promise<unknown> => {
    try {
      if (!isJobName(job.name)) throw new Error(`unknown job name ${job.name}`);
      const data = JOBS[job.name].data.parse(job.data);
      const context: JobContext = {
        id: job.id ?? '',
        partition: partitionOfQueueName(job.queueName ?? '') ?? -1,
        // A redelivered job (its worker died) or a retried one may have committed part of its work.
        firstDelivery: (job.attemptsStarted ?? 1) <= 1 && !job.stalledCounter,
        ...(signal ? { signal } : {}),
      };
      const result = await (handlers[job.name] as AnyHandler)(data, context);
      reply(job, { ok: true, result } as JobReply<JobName>);
      return result;
    } catch (error) {
      // Abandoned: the partition's consumer (consumer.ts) takes it from here; no reply.
      if (error instanceof JobAbandoned) throw error;
      // The job fails in BullMQ: say so at once rather than let the waiter time out.
      reply(job, { ok: false, reason: error instanceof Error ? error.message : String(error) });
      throw error;
    }
  };
}
