import { hashApiKey } from '@quest/domain';
import { Queue, QueueEvents } from 'bullmq';
import { PEER_JOB_OPTIONS, PEER_QUEUE, type PeerJob, peerConnection, peerEnv } from './peer-queue.ts';
import { plainApp, serve } from './plain-http.ts';
import type { PlainOutcome } from './plain-ledger.ts';

/**
 * The OBVIOUS-QUEUE PEER's HTTP process: the design card (every write through BullMQ, a
 * synchronous answer) done the way BullMQ's guide shows it. Per request it adds ONE job to one
 * queue and awaits `job.waitUntilFinished(queueEvents)` on the process's one `QueueEvents`, then
 * answers with the job's result as the lean reference would (`plain-http.ts`). The decision is
 * `peer-worker.ts`'s: one BullMQ Worker at concurrency 1 running the lean reference's transaction.
 * No partitions, no coalescing, no reply streams, no leases, no idempotency, no events.
 * Bench-only; never shipped.
 *
 * Ready (GET /readyz 200) once the queue has a worker. Env: REDIS_URL, PEER_PREFIX (its Redis key
 * prefix), DATABASE_URL (read by the worker; required here too so both start from one env), PORT, HOST.
 */

const env = peerEnv();
const connection = peerConnection(env.redisUrl);
const queue = new Queue<PeerJob, PlainOutcome>(PEER_QUEUE, {
  connection,
  prefix: env.prefix,
  defaultJobOptions: PEER_JOB_OPTIONS,
});
const queueEvents = new QueueEvents(PEER_QUEUE, { connection, prefix: env.prefix });
// Each request waiting in waitUntilFinished listens for the queue's 'closing': one per connection in flight.
queue.setMaxListeners(0);
await queueEvents.waitUntilReady();

const app = plainApp({
  ready: async () => (await queue.getWorkersCount()) > 0,
  allocate: async ({ apiKey, questId, points, address }) => {
    const job = await queue.add('allocate', { keyHash: hashApiKey(apiKey).toString('hex'), questId, points, address });
    return job.waitUntilFinished(queueEvents);
  },
});

await serve(app, () => Promise.all([queueEvents.close(), queue.close()]));
