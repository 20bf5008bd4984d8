import type { Redis } from 'ioredis';
import {
  type AllocateJobData,
  type BatchJobData,
  DomainError,
  type JobName,
  type JobReply,
  jobReplySchema,
  type RequestItem,
  type RequestOutcome,
} from '@quest/domain';
import { PartitionCountMismatch, producerConnection } from './connection.ts';
import { type JobState, PartitionQueues, type QueueSettings } from './partitions.ts';
import { liveMembers } from './stats.ts';
import { ReplyListener, type ReplyWait } from './replies.ts';

/**
 * How one request (an allocation or a reversal) travelled: its decision came back (`decided`), the job failed (`failed`: a bug
 * or a permanent error, nothing applied), or no usable reply came within the wait (`undecided`),
 * with where its job stood then — queued, finished (its reply was lost: the database has the
 * decision), failed, or unknown (gone from Redis). What to answer then is the caller's business;
 * the transport knows nothing about where decisions are stored.
 */
export type Delivery =
  | { kind: 'decided'; outcome: RequestOutcome }
  | { kind: 'failed' }
  | { kind: 'undecided'; reason: 'timeout' | 'lost' | 'unreadable'; job: JobState; jobId: string; enqueuedAt: number };

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
  /** The reply stream expires this long after the process stopped refreshing it (it died). */
  replyTtlMs?: number;
}

/** The API's handle on the allocation pipeline: the transport, from enqueue to reply. */
export interface Allocator {
  /**
   * Enqueue one request — an allocation or a reversal — (coalesced with others of its partition, in
   * arrival order) and wait for its decision.
   */
  allocate(item: RequestItem): Promise<Delivery>;
  /**
   * Queue a batch job (deduplicated by batch id while one is unfinished, so concurrent retries share
   * it) and wait for its reply up to `waitMs`; undefined when none came.
   */
  runBatch(data: Omit<BatchJobData, 'reply'>, opts?: { waitMs?: number }): Promise<JobReply<'batch'> | undefined>;
  ping(): Promise<void>;
  /** Worker processes alive in the pool (members whose heartbeat has not expired, on Redis's clock). */
  liveWorkers(): Promise<number>;
  close(): Promise<void>;
  /** This process's reply stream (workers deliver its jobs' decisions there). */
  readonly replyKey?: string;
}

interface Pending {
  item: RequestItem & { enqueuedAt: number };
  deadline: number;
  resolve: (r: Delivery) => void;
  reject: (e: unknown) => void;
}

interface PartitionState {
  buffer: Pending[];
  scheduled: boolean;
  inFlight: number;
}

const replyParsers = { allocate: jobReplySchema('allocate'), batch: jobReplySchema('batch') };

function parseReply<N extends JobName>(name: N, got: ReplyWait): JobReply<N> | undefined {
  if (got.kind !== 'reply') return undefined;
  try {
    const parsed = replyParsers[name].safeParse(JSON.parse(got.value));
    return parsed.success ? (parsed.data as JobReply<N>) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Producer with request coalescing. Requests for the same partition that arrive together (in the
 * same event-loop turn, or while this process already has `maxInFlightPerPartition` jobs of that
 * partition unfinished) travel as ONE job: an ordered list of items. Decisions come back per item,
 * through this process's reply stream (replies.ts), named by a token unique to the enqueue.
 * Because a partition's jobs are decided strictly one after another anyway, holding items back
 * while a job is in flight costs almost no latency and turns N row-lock round trips into one.
 */
export async function createAllocator(opts: AllocatorOptions): Promise<Allocator> {
  const maxItems = opts.maxItemsPerJob ?? 500;
  const maxInFlight = opts.maxInFlightPerPartition ?? 1;
  const retentionSeconds = Math.max(opts.retentionSeconds ?? 60, Math.ceil((2 * opts.waitMs) / 1000));
  const client: Redis = producerConnection(opts.redisUrl, opts.commandTimeoutMs);
  const queues = new PartitionQueues(client, opts);
  const replies = new ReplyListener({
    redisUrl: opts.redisUrl,
    prefix: opts.prefix,
    ...(opts.processId ? { processId: opts.processId } : {}),
    ...(opts.replyTtlMs ? { ttlMs: opts.replyTtlMs } : {}),
  });
  const parts: PartitionState[] = Array.from({ length: opts.partitions }, () => ({
    buffer: [],
    scheduled: false,
    inFlight: 0,
  }));

  // Topology checks run on every (re)connect; until one passes, allocations answer 503.
  let topologyOk = false;
  let topologyError: Error | undefined;
  const checkTopology = async () => {
    try {
      await queues.ensureTopology();
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
      await Promise.allSettled([replies.close(), queues.close()]);
      client.disconnect();
      throw topologyError;
    }
    await replies.ready(2000);
  }

  /**
   * Wait for a job's reply until `deadline`. A stream lost meanwhile may have dropped the reply:
   * a job still queued or running will reply to the re-created stream, so wait on; otherwise stop.
   */
  async function awaitReply(p: number, jobId: string, token: string, deadline: number): Promise<ReplyWait> {
    for (;;) {
      const got = await replies.wait(token, deadline - Date.now());
      if (got.kind !== 'lost' || Date.now() >= deadline) return got;
      if ((await queues.state(p, jobId, token).catch(() => 'unknown')) !== 'queued') return got;
    }
  }

  /** Poll a job of another request until it is no longer queued, or until `deadline`. */
  async function followJob(p: number, jobId: string, deadline: number): Promise<void> {
    for (let pause = 20; Date.now() < deadline; pause = Math.min(pause * 2, 250)) {
      if ((await queues.state(p, jobId).catch(() => 'unknown')) !== 'queued') return;
      await new Promise((r) => setTimeout(r, Math.min(pause, Math.max(0, deadline - Date.now()))));
    }
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
      const enqueuedAt = Date.now();
      for (const c of chunk) c.item.enqueuedAt = enqueuedAt;
      const token = replies.newToken();
      let jobId: string;
      try {
        const data: AllocateJobData = { items: chunk.map((c) => c.item), reply: { to: replies.key, token } };
        jobId = await queues.add(p, 'allocate', data, { retentionSeconds });
      } catch (error) {
        for (const c of chunk) c.reject(new DomainError('QUEUE_UNAVAILABLE', undefined, undefined, error));
        return;
      }
      const deadline = Math.min(...chunk.map((c) => c.deadline));
      let deliveries: Delivery[];
      try {
        const got = await awaitReply(p, jobId, token, deadline);
        const reply = parseReply('allocate', got);
        if (reply?.ok) {
          const { outcomes } = reply.result;
          deliveries = chunk.map((_, i) => {
            const outcome = outcomes[i];
            return outcome ? { kind: 'decided', outcome } : { kind: 'failed' };
          });
        } else if (reply) {
          deliveries = chunk.map(() => ({ kind: 'failed' }));
        } else {
          // No usable reply: where its job stands says what the caller can learn elsewhere.
          const job = await queues.state(p, jobId, token).catch((): JobState => 'unknown');
          const reason = got.kind === 'reply' ? 'unreadable' : got.kind;
          deliveries = chunk.map(() =>
            job === 'failed' ? { kind: 'failed' } : { kind: 'undecided', reason, job, jobId, enqueuedAt },
          );
        }
      } catch {
        // Lost contact while finding out: the job is queued and will be decided.
        deliveries = chunk.map(() => ({ kind: 'undecided', reason: 'lost', job: 'queued', jobId, enqueuedAt }));
      }
      for (const [i, c] of chunk.entries()) c.resolve(deliveries[i]!);
    } finally {
      s.inFlight--;
      schedule(p);
    }
  }

  return {
    replyKey: replies.key,

    allocate(item) {
      return new Promise<Delivery>((resolve, reject) => {
        if (client.status !== 'ready' || !topologyOk) {
          const why = topologyError ?? new Error(`Redis connection ${client.status}`);
          reject(new DomainError('QUEUE_UNAVAILABLE', undefined, undefined, why));
          return;
        }
        const p = queues.partitionOf(item.questId);
        parts[p]!.buffer.push({ item: { ...item, enqueuedAt: 0 }, deadline: Date.now() + opts.waitMs, resolve, reject });
        schedule(p);
      });
    },

    async runBatch(data, { waitMs } = {}) {
      const p = queues.partitionOf(data.questId);
      const token = replies.newToken();
      let jobId: string;
      try {
        // Deduplicated rather than given a custom id: every job keeps an ordinal id from the queue's
        // counter, and a finished batch can be re-run (resume). A request deduplicated onto another
        // request's job gets no reply: it follows that job, then answers from the database.
        jobId = await queues.add(
          p,
          'batch',
          { ...data, reply: { to: replies.key, token } },
          { retentionSeconds, deduplicationId: data.batchId },
        );
      } catch (error) {
        throw new DomainError('QUEUE_UNAVAILABLE', undefined, undefined, error);
      }
      const deadline = Date.now() + Math.max(1, waitMs ?? opts.waitMs);
      if ((await queues.state(p, jobId, token).catch(() => 'unknown')) === 'unknown') {
        // Deduplicated onto another request's job (a concurrent retry of the same batch): no reply
        // comes here. Follow that job to its end, then the caller answers from the database.
        await followJob(p, jobId, deadline);
        return undefined;
      }
      const got = await awaitReply(p, jobId, token, deadline).catch(() => undefined);
      return got && parseReply('batch', got);
    },

    async ping() {
      await client.ping();
      if (!topologyOk) throw topologyError ?? new Error('queue topology not checked yet');
    },

    async liveWorkers() {
      return liveMembers(client, opts.prefix);
    },

    async close() {
      // Graceful first; a connection stuck reconnecting must not hold up shutdown, so cap the wait
      // and then drop the sockets.
      const graceful = Promise.allSettled([replies.close(), queues.close()]);
      await Promise.race([graceful, new Promise((r) => setTimeout(r, 2000).unref())]);
      client.disconnect();
    },
  };
}
