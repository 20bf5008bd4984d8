import { type Job, Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import {
  type AllocateJobData,
  type AllocationItem,
  type AllocationOutcome,
  allocateJob,
  type BatchJobData,
  type BatchJobResult,
  batchJob,
  DomainError,
  partitionOf,
} from '@quest/domain';
import { assertPartitionCount, PartitionCountMismatch, producerConnection } from './connection.ts';
import { membersKey, partitionQueueName } from './names.ts';
import { ReplyListener, type ReplyWait, replyJobKey } from './replies.ts';

export interface QueueSettings {
  redisUrl: string;
  prefix: string;
  partitions: number;
}

/** Pending: not decided within the wait. The job (if it was added) and the enqueue time identify this attempt. */
export type AllocateResult = AllocationOutcome | { status: 'pending'; jobId: string | undefined; enqueuedAt: number };
export type BatchRunResult = BatchJobResult | { status: 'pending' };

export interface AllocatorOptions extends QueueSettings {
  /** How long a request waits for its decision before it is answered 202 (pending). */
  waitMs: number;
  /** Most items coalesced into one job. */
  maxItemsPerJob?: number;
  /** Jobs of one partition this process may have queued but unfinished before it holds new items back to coalesce them. */
  maxInFlightPerPartition?: number;
  /** Seconds finished jobs are kept in Redis (waiters need them; must be ≥ 2 × waitMs). */
  retentionSeconds?: number;
  /** Redis command timeout for producers: how fast a dead Redis turns into a 503. */
  commandTimeoutMs?: number;
  /** This process's id in its reply stream's key (default: host, pid and a random tail). */
  processId?: string;
  /**
   * Where a decision is looked up when its reply did not come (lost or late) but its job has
   * finished: the database's status of each item, undefined (or pending) when not decided there.
   * Without it such items are answered pending.
   */
  lookup?: (items: readonly AllocationItem[]) => Promise<(AllocationOutcome | undefined)[]>;
  /** Told each time a wait ends without a reply: why, how many items, and how many the lookup found decided. */
  onFallback?: (e: { reason: 'timeout' | 'lost' | 'unreadable'; items: number; decided: number }) => void;
  /** The reply stream expires this long after the process stopped refreshing it (it died). */
  replyTtlMs?: number;
}

/** The API's handle on the allocation pipeline. */
export interface Allocator {
  allocate(item: AllocationItem): Promise<AllocateResult>;
  /**
   * Queue a batch job (deduplicated by batch id while one is unfinished, so concurrent retries share
   * it) and wait for it up to `waitMs`.
   */
  runBatch(data: BatchJobData, opts?: { waitMs?: number }): Promise<BatchRunResult>;
  ping(): Promise<void>;
  /** Worker processes alive in the pool (members whose heartbeat has not expired, on Redis's clock). */
  liveWorkers(): Promise<number>;
  close(): Promise<void>;
  /** This process's reply stream (workers deliver its jobs' decisions there). */
  readonly replyKey?: string;
}

interface Pending {
  item: AllocationItem & { enqueuedAt: number };
  deadline: number;
  resolve: (r: AllocateResult) => void;
  reject: (e: unknown) => void;
}

interface PartitionState {
  queue: Queue;
  buffer: Pending[];
  scheduled: boolean;
  inFlight: number;
}

/**
 * Every allocation job: one attempt (transient errors are retried inside the job, so it keeps its
 * place), finished jobs kept `retentionSeconds` for their waiters.
 */
export function jobOptions(retentionSeconds: number) {
  return { attempts: 1, removeOnComplete: { age: retentionSeconds }, removeOnFail: { age: 24 * 3600 } };
}

/**
 * Producer with request coalescing. Requests for the same partition that arrive together (in the
 * same event-loop turn, or while this process already has `maxInFlightPerPartition` jobs of that
 * partition unfinished) travel as ONE job: an ordered list of items. Decisions come back per item,
 * through this process's reply stream (replies.ts); when a reply does not come in time, the job's
 * state and then the database (`lookup`) say what to answer.
 * Because a partition's jobs are decided strictly one after another anyway, holding items back
 * while a job is in flight costs almost no latency and turns N row-lock round trips into one.
 */
export async function createAllocator(opts: AllocatorOptions): Promise<Allocator> {
  const maxItems = opts.maxItemsPerJob ?? 500;
  const maxInFlight = opts.maxInFlightPerPartition ?? 1;
  const retention = Math.max(opts.retentionSeconds ?? 60, Math.ceil((2 * opts.waitMs) / 1000));
  const client: Redis = producerConnection(opts.redisUrl, opts.commandTimeoutMs);
  const replies = new ReplyListener({
    redisUrl: opts.redisUrl,
    prefix: opts.prefix,
    ...(opts.processId ? { processId: opts.processId } : {}),
    ...(opts.replyTtlMs ? { ttlMs: opts.replyTtlMs } : {}),
  });
  const parts: PartitionState[] = [];
  for (let p = 0; p < opts.partitions; p++) {
    const queue = new Queue(partitionQueueName(p), { connection: client, prefix: opts.prefix });
    // Connection errors surface per request as 503s; they must not crash the process.
    queue.on('error', () => {});
    parts.push({ queue, buffer: [], scheduled: false, inFlight: 0 });
  }

  // Topology checks run on every (re)connect; until one passes, allocations answer 503.
  let topologyOk = false;
  let topologyError: Error | undefined;
  const checkTopology = async () => {
    try {
      await assertPartitionCount(client, opts.prefix, opts.partitions);
      // Exactly one active job per partition across the whole pool: this is what makes order strict.
      await Promise.all(parts.map((s) => s.queue.setGlobalConcurrency(1)));
      topologyOk = true;
      topologyError = undefined;
    } catch (error) {
      topologyOk = false;
      topologyError = error as Error;
    }
  };
  client.on('error', () => {});
  client.on('ready', () => void checkTopology());
  client.on('close', () => {
    topologyOk = false;
  });
  // At start-up, wait briefly for Redis: a wrong partition count must stop the process, but a
  // Redis that is down must not stop the API from serving reads.
  const up = await Promise.race([
    new Promise<boolean>((r) => client.once('ready', () => r(true))),
    new Promise<boolean>((r) => setTimeout(() => r(false), 1500)),
  ]);
  if (up) {
    await checkTopology();
    if (topologyError instanceof PartitionCountMismatch) {
      await Promise.allSettled([replies.close(), ...parts.map((s) => s.queue.close())]);
      client.disconnect();
      throw topologyError;
    }
    await replies.ready(2000);
  }

  const options = jobOptions(retention);

  /**
   * Wait for a job's reply until `deadline`. A stream lost meanwhile may have dropped the reply:
   * a job still queued or running will reply to the re-created stream, so wait on; otherwise stop.
   */
  async function awaitReply(s: PartitionState, job: Job, deadline: number): Promise<ReplyWait> {
    const key = replyJobKey(s.queue.name, job.id!);
    for (;;) {
      const got = await replies.wait(key, deadline - Date.now());
      if (got.kind !== 'lost' || Date.now() >= deadline) return got;
      const state = await s.queue.getJobState(job.id!).catch(() => 'unknown');
      if (state === 'completed' || state === 'failed' || state === 'unknown') return got;
    }
  }

  /**
   * No usable reply: ask where the truth is. A job still queued or running is pending (no database
   * read); a finished job's items are looked up in the database (a lost reply); a job that failed
   * outright (a worker bug) is a failure.
   */
  async function withoutReply(
    s: PartitionState,
    job: Job,
    chunk: Pending[],
    enqueuedAt: number,
    reason: 'timeout' | 'lost' | 'unreadable',
  ): Promise<AllocateResult[]> {
    const pending: AllocateResult = { status: 'pending', jobId: job.id, enqueuedAt };
    const state = await s.queue.getJobState(job.id!).catch(() => 'unknown');
    let out: AllocateResult[] = chunk.map(() => pending);
    if (state === 'failed') out = chunk.map(() => ({ status: 'failed', code: 'ALLOCATION_FAILED' }));
    else if ((state === 'completed' || state === 'unknown') && opts.lookup) {
      const found = await opts.lookup(chunk.map((c) => c.item)).catch(() => []);
      out = chunk.map((_, i) => found[i] ?? pending);
    }
    opts.onFallback?.({ reason, items: chunk.length, decided: out.filter((o) => o.status !== 'pending').length });
    return out;
  }

  function schedule(p: number) {
    const s = parts[p]!;
    if (s.scheduled || s.buffer.length === 0 || s.inFlight >= maxInFlight) return;
    s.scheduled = true;
    setImmediate(() => {
      s.scheduled = false;
      while (s.buffer.length && s.inFlight < maxInFlight) void send(p, s.buffer.splice(0, maxItems));
    });
  }

  async function send(p: number, chunk: Pending[]) {
    const s = parts[p]!;
    s.inFlight++;
    try {
      let job: Job;
      const enqueuedAt = Date.now();
      for (const c of chunk) c.item.enqueuedAt = enqueuedAt;
      try {
        const data: AllocateJobData = { items: chunk.map((c) => c.item), replyTo: replies.key };
        job = await s.queue.add(allocateJob.name, data, options);
      } catch (error) {
        for (const c of chunk) c.reject(new DomainError('QUEUE_UNAVAILABLE', undefined, undefined, error));
        return;
      }
      const deadline = Math.min(...chunk.map((c) => c.deadline));
      try {
        const got = await awaitReply(s, job, deadline);
        let outcomes: AllocateResult[] | undefined;
        if (got.kind === 'reply') {
          const parsed = allocateJob.result.safeParse(JSON.parse(got.value));
          if (parsed.success)
            outcomes = chunk.map((_, i) => parsed.data.outcomes[i] ?? { status: 'failed', code: 'ALLOCATION_FAILED' });
        }
        outcomes ??= await withoutReply(s, job, chunk, enqueuedAt, got.kind === 'reply' ? 'unreadable' : got.kind);
        for (const [i, c] of chunk.entries()) c.resolve(outcomes[i]!);
      } catch {
        // Lost contact while finding out: the job is queued and will be decided, so the truthful
        // answer is "pending".
        for (const c of chunk) c.resolve({ status: 'pending', jobId: job.id, enqueuedAt });
      }
    } finally {
      s.inFlight--;
      schedule(p);
    }
  }

  return {
    replyKey: replies.key,

    allocate(item) {
      return new Promise<AllocateResult>((resolve, reject) => {
        if (client.status !== 'ready' || !topologyOk) {
          const why = topologyError ?? new Error(`Redis connection ${client.status}`);
          reject(new DomainError('QUEUE_UNAVAILABLE', undefined, undefined, why));
          return;
        }
        const p = partitionOf(item.questId, opts.partitions);
        parts[p]!.buffer.push({ item: { ...item, enqueuedAt: 0 }, deadline: Date.now() + opts.waitMs, resolve, reject });
        schedule(p);
      });
    },

    async runBatch(data, { waitMs } = {}) {
      const s = parts[partitionOf(data.questId, opts.partitions)]!;
      let job: Job;
      try {
        // Deduplicated rather than given a custom id: every job keeps an ordinal id from the queue's
        // counter (its place in the partition's order), and a finished batch can be re-run (resume).
        // A request deduplicated onto another process's job gets no reply: it answers from the
        // database when its wait ends (the route reads the batch's row either way).
        job = await s.queue.add(
          batchJob.name,
          { ...data, replyTo: replies.key },
          { ...options, deduplication: { id: data.batchId } },
        );
      } catch (error) {
        throw new DomainError('QUEUE_UNAVAILABLE', undefined, undefined, error);
      }
      const got = await awaitReply(s, job, Date.now() + Math.max(1, waitMs ?? opts.waitMs)).catch(() => undefined);
      if (got?.kind === 'reply') {
        const parsed = batchJob.result.safeParse(JSON.parse(got.value));
        if (parsed.success) return parsed.data;
      }
      return { status: 'pending' };
    },

    async ping() {
      await client.ping();
      if (!topologyOk) throw topologyError ?? new Error('queue topology not checked yet');
    },

    async liveWorkers() {
      const [seconds, micros] = await client.time();
      return client.zcount(membersKey(opts.prefix), Number(seconds) * 1000 + Math.floor(Number(micros) / 1000), '+inf');
    },

    async close() {
      // Graceful first; a connection stuck reconnecting must not hold up shutdown, so cap the wait
      // and then drop the sockets.
      const graceful = Promise.allSettled([replies.close(), ...parts.map((s) => s.queue.close())]);
      await Promise.race([graceful, new Promise((r) => setTimeout(r, 2000).unref())]);
      client.disconnect();
    },
  };
}
