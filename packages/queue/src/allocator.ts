import type { Redis } from 'ioredis';
import { type AllocateJobData, DomainError, type JobName, type JobReply, jobReplySchema, type RequestItem } from '@quest/domain';
import { PartitionCountMismatch, producerConnection } from './connection.ts';
import { type JobState, PartitionQueues } from './partitions.ts';
import type { Allocator, AllocatorOptions, Delivery } from './producer.ts';
import { ReplyListener, type ReplyWait } from './replies.ts';
import { liveMembers } from './stats.ts';

interface Pending {
  item: RequestItem & { enqueuedAt: number };
  deadline: number;
  resolve: (r: Delivery) => void;
  reject: (e: unknown) => void;
}

interface PartitionState {
  buffer: Pending[];
  scheduled: boolean;
  /** A job of this partition is queued and unfinished. */
  busy: boolean;
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
 * The queues' topology as last checked on the producer's connection: checked on every (re)connect,
 * lost with the connection; until a check passes, allocations answer 503.
 */
class TopologyWatch {
  ok = false;
  error: Error | undefined;

  constructor(private readonly queues: PartitionQueues) {}

  async check(): Promise<void> {
    try {
      await this.queues.ensureTopology();
      this.ok = true;
      this.error = undefined;
    } catch (error) {
      this.ok = false;
      this.error = error as Error;
    }
  }

  lost(): void {
    this.ok = false;
  }
}

const unavailable = (cause: unknown) => new DomainError('QUEUE_UNAVAILABLE', undefined, undefined, cause);

/**
 * Producer with request coalescing. Requests for the same partition that arrive together (in the
 * same event-loop turn, or while a job of that partition this process queued is unfinished)
 * travel as ONE job: an ordered list of items. Decisions come back per item, through this
 * process's reply stream (replies.ts), named by a token unique to the enqueue. Because a
 * partition's jobs are decided strictly one after another anyway, holding items back while a job
 * is in flight costs almost no latency and turns N row-lock round trips into one.
 */
class QueueAllocator implements Allocator {
  private readonly client: Redis;
  private readonly queues: PartitionQueues;
  private readonly replies: ReplyListener;
  private readonly topology: TopologyWatch;
  private readonly parts: PartitionState[];
  private readonly maxItems: number;
  private readonly retentionSeconds: number;

  constructor(
    private readonly opts: AllocatorOptions,
    t: { client: Redis; queues: PartitionQueues; replies: ReplyListener; topology: TopologyWatch },
  ) {
    ({ client: this.client, queues: this.queues, replies: this.replies, topology: this.topology } = t);
    this.maxItems = opts.maxItemsPerJob ?? 500;
    this.retentionSeconds = Math.max(opts.retentionSeconds ?? 60, Math.ceil((2 * opts.waitMs) / 1000));
    this.parts = Array.from({ length: opts.partitions }, () => ({ buffer: [], scheduled: false, busy: false }));
  }

  get replyKey(): string {
    return this.replies.key;
  }

  allocate(item: RequestItem): Promise<Delivery> {
    return new Promise<Delivery>((resolve, reject) => {
      if (this.client.status !== 'ready' || !this.topology.ok) {
        reject(unavailable(this.topology.error ?? new Error(`Redis connection ${this.client.status}`)));
        return;
      }
      const p = this.queues.partitionOf(item.questId);
      const pending = { item: { ...item, enqueuedAt: 0 }, deadline: Date.now() + this.opts.waitMs, resolve, reject };
      this.parts[p]!.buffer.push(pending);
      this.schedule(p);
    });
  }

  async runBatch(data: Parameters<Allocator['runBatch']>[0], { waitMs }: { waitMs?: number } = {}) {
    const p = this.queues.partitionOf(data.questId);
    const token = this.replies.newToken();
    let jobId: string;
    try {
      // Deduplicated rather than given a custom id: every job keeps an ordinal id from the queue's
      // counter, and a finished batch can be re-run (resume).
      const job = { ...data, reply: { to: this.replies.key, token } };
      jobId = await this.queues.add(p, 'batch', job, { retentionSeconds: this.retentionSeconds, deduplicationId: data.batchId });
    } catch (error) {
      throw unavailable(error);
    }
    const deadline = Date.now() + Math.max(1, waitMs ?? this.opts.waitMs);
    if ((await this.queues.state(p, jobId, token).catch(() => 'unknown')) === 'unknown') {
      // Deduplicated onto another request's job (a concurrent retry of the same batch): no reply
      // comes here. Follow that job to its end, then the caller answers from the database.
      await this.followJob(p, jobId, deadline);
      return undefined;
    }
    const got = await this.awaitReply(p, jobId, token, deadline).catch(() => undefined);
    return got && parseReply('batch', got);
  }

  async ping(): Promise<void> {
    await this.client.ping();
    if (!this.topology.ok) throw this.topology.error ?? new Error('queue topology not checked yet');
  }

  liveWorkers(): Promise<number> {
    return liveMembers(this.client, this.opts.prefix);
  }

  async close(): Promise<void> {
    // Graceful first; a connection stuck reconnecting must not hold up shutdown, so cap the wait
    // and then drop the sockets.
    const graceful = Promise.allSettled([this.replies.close(), this.queues.close()]);
    await Promise.race([graceful, new Promise((r) => setTimeout(r, 2000).unref())]);
    this.client.disconnect();
  }

  private schedule(p: number) {
    const s = this.parts[p]!;
    if (s.scheduled || s.buffer.length === 0 || s.busy) return;
    s.scheduled = true;
    setImmediate(() => {
      s.scheduled = false;
      if (s.buffer.length && !s.busy) void this.send(p, s.buffer.splice(0, this.maxItems));
    });
  }

  /** One job for `chunk`: enqueue it, wait for its reply, and resolve each item's waiter. */
  private async send(p: number, chunk: Pending[]) {
    const s = this.parts[p]!;
    s.busy = true;
    try {
      const enqueuedAt = Date.now();
      for (const c of chunk) c.item.enqueuedAt = enqueuedAt;
      const token = this.replies.newToken();
      let jobId: string;
      try {
        const data: AllocateJobData = { items: chunk.map((c) => c.item), reply: { to: this.replies.key, token } };
        jobId = await this.queues.add(p, 'allocate', data, { retentionSeconds: this.retentionSeconds });
      } catch (error) {
        for (const c of chunk) c.reject(unavailable(error));
        return;
      }
      const deadline = Math.min(...chunk.map((c) => c.deadline));
      const deliveries = await this.deliveries(p, { jobId, token, enqueuedAt, deadline }, chunk.length);
      for (const [i, c] of chunk.entries()) c.resolve(deliveries[i]!);
    } finally {
      s.busy = false;
      this.schedule(p);
    }
  }

  /** What became of each of a job's `count` items by its deadline. */
  private async deliveries(
    p: number,
    job: { jobId: string; token: string; enqueuedAt: number; deadline: number },
    count: number,
  ): Promise<Delivery[]> {
    const { jobId, token, enqueuedAt } = job;
    const each = (d: (i: number) => Delivery) => Array.from({ length: count }, (_, i) => d(i));
    try {
      const got = await this.awaitReply(p, jobId, token, job.deadline);
      const reply = parseReply('allocate', got);
      if (reply?.ok) {
        const { outcomes } = reply.result;
        return each((i) => (outcomes[i] ? { kind: 'decided', outcome: outcomes[i] } : { kind: 'failed' }));
      }
      if (reply) return each(() => ({ kind: 'failed' }));
      // No usable reply: where its job stands says what the caller can learn elsewhere.
      const state = await this.queues.state(p, jobId, token).catch((): JobState => 'unknown');
      const reason = got.kind === 'reply' ? 'unreadable' : got.kind;
      return each(() => (state === 'failed' ? { kind: 'failed' } : { kind: 'undecided', reason, job: state, jobId, enqueuedAt }));
    } catch {
      // Lost contact while finding out: the job is queued and will be decided.
      return each(() => ({ kind: 'undecided', reason: 'lost', job: 'queued', jobId, enqueuedAt }));
    }
  }

  /**
   * Wait for a job's reply until `deadline`. A stream lost meanwhile may have dropped the reply:
   * a job still queued or running will reply to the re-created stream, so wait on; otherwise stop.
   */
  private async awaitReply(p: number, jobId: string, token: string, deadline: number): Promise<ReplyWait> {
    for (;;) {
      const got = await this.replies.wait(token, deadline - Date.now());
      if (got.kind !== 'lost' || Date.now() >= deadline) return got;
      if ((await this.queues.state(p, jobId, token).catch(() => 'unknown')) !== 'queued') return got;
    }
  }

  /** Poll a job of another request until it is no longer queued, or until `deadline`. */
  private async followJob(p: number, jobId: string, deadline: number): Promise<void> {
    for (let pause = 20; Date.now() < deadline; pause = Math.min(pause * 2, 250)) {
      if ((await this.queues.state(p, jobId).catch(() => 'unknown')) !== 'queued') return;
      await new Promise((r) => setTimeout(r, Math.min(pause, Math.max(0, deadline - Date.now()))));
    }
  }
}

/**
 * The API's producer (allocator.ts) on a fail-fast connection of its own, with its reply stream.
 * At start-up it waits briefly for Redis: a wrong partition count stops the process
 * (PartitionCountMismatch), but a Redis that is down must not stop the API from serving reads.
 */
export async function createAllocator(opts: AllocatorOptions): Promise<Allocator> {
  const client = producerConnection(opts.redisUrl);
  const queues = new PartitionQueues(client, opts);
  const replies = new ReplyListener({ redisUrl: opts.redisUrl, prefix: opts.prefix });
  const topology = new TopologyWatch(queues);
  client.on('error', () => {});
  client.on('ready', () => void topology.check());
  client.on('close', () => topology.lost());
  const up = await Promise.race([
    new Promise<boolean>((r) => client.once('ready', () => r(true))),
    new Promise<boolean>((r) => setTimeout(() => r(false), 1500)),
  ]);
  if (up) {
    await topology.check();
    if (topology.error instanceof PartitionCountMismatch) {
      await Promise.allSettled([replies.close(), queues.close()]);
      client.disconnect();
      throw topology.error;
    }
    await replies.ready(2000);
  }
  return new QueueAllocator(opts, { client, queues, replies, topology });
}
