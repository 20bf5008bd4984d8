import type { ConnectionOptions, JobsOptions } from 'bullmq';

/**
 * The obvious-queue peer's one queue, as both of its processes see it (`peer-api.ts` adds a job
 * per request, `peer-worker.ts` runs them one at a time). Everything here is what BullMQ's guide
 * shows: plain connection options, one queue, jobs kept for a while after they finish (so that
 * `waitUntilFinished` can still read a job that completed before it listened), no retries.
 * Bench-only; never shipped.
 */

export const PEER_QUEUE = 'allocations';

/** One request: the key's SHA-256 (hex, never the key itself), the quest, the amount, the address. */
export interface PeerJob {
  keyHash: string;
  questId: number;
  points: number;
  address: string;
}

/** BullMQ's auto-removal as its guide shows it: keep finished jobs up to an hour and at most 1,000. */
export const PEER_JOB_OPTIONS: JobsOptions = {
  removeOnComplete: { age: 3600, count: 1000 },
  removeOnFail: { age: 24 * 3600 },
};

/** REDIS_URL as BullMQ connection options; BullMQ requires maxRetriesPerRequest null where it blocks (Worker, QueueEvents). */
export function peerConnection(redisUrl: string): ConnectionOptions {
  return { url: redisUrl, maxRetriesPerRequest: null };
}

/** The peer's environment: DATABASE_URL, REDIS_URL, PEER_PREFIX (its own Redis key prefix). */
export function peerEnv(env: NodeJS.ProcessEnv = process.env) {
  const missing = ['DATABASE_URL', 'REDIS_URL', 'PEER_PREFIX'].filter((k) => !env[k]);
  if (missing.length) throw new Error(`obvious-queue peer: ${missing.join(', ')} not set`);
  return { databaseUrl: env.DATABASE_URL!, redisUrl: env.REDIS_URL!, prefix: env.PEER_PREFIX! };
}
