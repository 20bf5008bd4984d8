import { createSql } from '@quest/db';
import { Worker } from 'bullmq';
import { PEER_QUEUE, type PeerJob, peerConnection, peerEnv } from './peer-queue.ts';
import { type PlainOutcome, plainAllocate } from './plain-ledger.ts';

/**
 * The OBVIOUS-QUEUE PEER's worker process (see peer-api.ts): one BullMQ Worker on the one queue,
 * concurrency 1 (so jobs are decided one at a time, in the order they were added), each job the
 * lean reference's five-statement transaction (`plain-ledger.ts`) on one PostgreSQL connection; its
 * outcome, a rejection included, is the job's result. Bench-only; never shipped.
 *
 * Env: DATABASE_URL, REDIS_URL, PEER_PREFIX.
 */

const env = peerEnv();
const sql = createSql(env.databaseUrl, { max: 1, applicationName: 'quest-bench-peer' });

const worker = new Worker<PeerJob, PlainOutcome>(
  PEER_QUEUE,
  (job) => plainAllocate(sql, { ...job.data, keyHash: Buffer.from(job.data.keyHash, 'hex') }),
  { connection: peerConnection(env.redisUrl), prefix: env.prefix, concurrency: 1 },
);
worker.on('failed', (job, error) => console.error(`peer worker: job ${job?.id} failed: ${error.message}`));
await worker.waitUntilReady();

const stop = async () => {
  await worker.close();
  await sql.end({ timeout: 5 });
  process.exit(0);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
