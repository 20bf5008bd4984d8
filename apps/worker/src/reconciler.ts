import type { Redis } from 'ioredis';
import { redrives } from './metrics.ts';
import type { AllocateJobData, RequestItem } from '@quest/domain';
import {
  findStrandedBatches,
  findStrandedDeliveries,
  findStrandedRequests,
  touchDeliveries,
  type StrandedRequest,
  type Sql,
  touchBatch,
  touchRequest,
} from '@quest/db';
import { type DeliveryQueue, type DeliveryRef, PartitionQueues, reconcilerLastRunKey, reconcilerLockKey } from '@quest/queue';

export interface ReconcilerOptions {
  sql: Sql;
  /** A consumer connection (no command timeout); the caller closes it, after stop(). */
  connection: Redis;
  prefix: string;
  partitions: number;
  memberId: string;
  /** How often a run starts (on the one pool member that holds the reconciler's lease). */
  intervalMs: number;
  /** Work untouched for less than this is left alone (its job is presumably still on its way). */
  minAgeMs: number;
  /** At most this many requests and this many batches are looked at per run. */
  limit: number;
  retentionSeconds: number;
  /** The webhook delivery queue: deliveries handed to it that it no longer carries are handed over again. */
  deliveryQueue?: DeliveryQueue;
  logger: { info(obj: object, msg?: string): void; warn(obj: object, msg?: string): void };
}

export interface ReconcilerRun {
  at: string;
  member: string;
  requestsChecked: number;
  requestsRedriven: number;
  batchesChecked: number;
  batchesRedriven: number;
  deliveriesChecked: number;
  deliveriesRedriven: number;
}

/** The job item a stranded request's marker stands for: an allocation, or a reversal. */
function requestItem(r: StrandedRequest, enqueuedAt: number): RequestItem {
  const base = { key: r.request_key, questId: r.quest_id, enqueuedAt };
  if (r.kind === 'reversal') {
    return {
      ...base,
      kind: 'reversal',
      payoutId: r.payout_id!,
      ...(r.points === null ? {} : { points: r.points }),
      ...(r.reason === null ? {} : { reason: r.reason }),
    };
  }
  return { ...base, points: r.points!, address: r.address! };
}

/**
 * PostgreSQL is the source of truth for accepted work; Redis only carries it. The reconciler finds
 * work that PostgreSQL holds as pending but no live job carries any more — a 202'd request or a
 * batch whose job Redis lost (data loss, a failover) or that finished without updating its row —
 * and enqueues it again with the same keys. The ledger's exactly-once rules make a re-drive safe
 * even if the original job is still alive somewhere. One pool member at a time runs it (a lease in
 * Redis); every run also re-asserts the queues' topology (partition count, global concurrency 1),
 * which a Redis that lost its data no longer has.
 */
export class Reconciler {
  private readonly redis: Redis;
  private readonly queues: PartitionQueues;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;
  readonly totals = { requests: 0, batches: 0, deliveries: 0 };

  constructor(private readonly opts: ReconcilerOptions) {
    this.redis = opts.connection;
    this.queues = new PartitionQueues(this.redis, opts);
  }

  start(): void {
    const tick = () => {
      if (this.stopped) return;
      this.running = this.runIfLeader()
        .then(() => {})
        .catch((err: unknown) => this.opts.logger.warn({ err }, 'reconciler run failed; next run retries'))
        .finally(() => {
          this.running = undefined;
          if (!this.stopped) this.timer = setTimeout(tick, this.opts.intervalMs);
        });
    };
    this.timer = setTimeout(tick, this.opts.intervalMs);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await Promise.race([this.running, new Promise((r) => setTimeout(r, 1000).unref())]);
    await this.queues.close();
  }

  /** Take or renew the lease; run when this member holds it. */
  async runIfLeader(): Promise<ReconcilerRun | undefined> {
    const key = reconcilerLockKey(this.opts.prefix);
    const ttl = this.opts.intervalMs * 3;
    const took = await this.redis.set(key, this.opts.memberId, 'PX', ttl, 'NX');
    if (!took) {
      if ((await this.redis.get(key)) !== this.opts.memberId) return undefined;
      await this.redis.pexpire(key, ttl);
    }
    return this.run();
  }

  async run(): Promise<ReconcilerRun> {
    await this.queues.ensureTopology();
    const requests = await this.redriveRequests();
    const batches = await this.redriveBatches();
    const deliveries = await this.redriveDeliveries();
    this.totals.requests += requests.redriven;
    this.totals.batches += batches.redriven;
    this.totals.deliveries += deliveries.redriven;
    const run: ReconcilerRun = {
      at: new Date().toISOString(),
      member: this.opts.memberId,
      requestsChecked: requests.checked,
      requestsRedriven: requests.redriven,
      batchesChecked: batches.checked,
      batchesRedriven: batches.redriven,
      deliveriesChecked: deliveries.checked,
      deliveriesRedriven: deliveries.redriven,
    };
    await this.redis.set(reconcilerLastRunKey(this.opts.prefix), JSON.stringify(run));
    return run;
  }

  /** Requests answered 202 and still undecided whose job is gone: one job per partition carries them again. */
  private async redriveRequests(): Promise<{ checked: number; redriven: number }> {
    const { sql, retentionSeconds } = this.opts;
    const queues = this.queues;
    const requests = await findStrandedRequests(sql, { olderThanMs: this.opts.minAgeMs, limit: this.opts.limit });
    const byPartition = new Map<number, typeof requests>();
    for (const r of requests) {
      const p = queues.partitionOf(r.quest_id);
      if (r.job_id && (await queues.state(p, r.job_id)) === 'queued') {
        await touchRequest(sql, { questId: r.quest_id, key: r.request_key, redriven: false });
        continue;
      }
      const list = byPartition.get(p);
      if (list) list.push(r);
      else byPartition.set(p, [r]);
    }
    let redriven = 0;
    for (const [p, list] of byPartition) {
      const enqueuedAt = Date.now();
      const data: AllocateJobData = { items: list.map((r) => requestItem(r, enqueuedAt)) };
      const jobId = await queues.add(p, 'allocate', data, { retentionSeconds });
      for (const r of list) {
        await touchRequest(sql, { questId: r.quest_id, key: r.request_key, jobId, redriven: true });
        const { kind: requestKind, quest_id: questId, request_key: key } = r;
        const fields = { kind: 'request', requestKind, questId, key, jobId, partition: p, redrives: r.redrives + 1 };
        this.opts.logger.info(fields, 're-driven');
      }
      redriven += list.length;
      redrives.inc({ kind: 'request' }, list.length);
    }
    return { checked: requests.length, redriven };
  }

  /** Batches accepted and unfinished whose job is gone (a live one holds its deduplication id). */
  private async redriveBatches(): Promise<{ checked: number; redriven: number }> {
    const { sql, retentionSeconds } = this.opts;
    const batches = await findStrandedBatches(sql, { olderThanMs: this.opts.minAgeMs, limit: this.opts.limit });
    let redriven = 0;
    for (const b of batches) {
      const p = this.queues.partitionOf(b.quest_id);
      if (await this.queues.deduplicatedJob(p, b.id)) {
        await touchBatch(sql, b.id, false);
        continue;
      }
      const data = { batchId: b.id, questId: b.quest_id };
      const jobId = await this.queues.add(p, 'batch', data, { retentionSeconds, deduplicationId: b.id });
      await touchBatch(sql, b.id, true);
      this.opts.logger.info({ kind: 'batch', batchId: b.id, jobId, partition: p, redrives: b.redrives + 1 }, 're-driven');
      redriven++;
      redrives.inc({ kind: 'batch' });
    }
    return { checked: batches.length, redriven };
  }

  /**
   * Webhook deliveries handed to the queue long ago and still pending, whose job is gone: one
   * question to Redis per job (a job carries a group of deliveries). A lost job is added again
   * under its own id with the deliveries it still carries, never regrouped: a late copy of it (an
   * add that was still on its way when Redis was asked) is the same job to BullMQ, or, once that
   * one has finished, finds its deliveries recorded and sends nothing. Regrouping them under a new
   * id let such a copy and the new job both send (docs/events.md).
   */
  private async redriveDeliveries(): Promise<{ checked: number; redriven: number }> {
    const { sql, deliveryQueue } = this.opts;
    if (!deliveryQueue) return { checked: 0, redriven: 0 };
    const deliveries = await findStrandedDeliveries(sql, { olderThanMs: this.opts.minAgeMs, limit: this.opts.limit });
    const byJob = new Map<string, DeliveryRef[]>();
    for (const d of deliveries) {
      // A delivery handed to the queue names its job (set with enqueued_at, migration 00011).
      if (d.jobId === null) continue;
      const refs = byJob.get(d.jobId);
      if (refs) refs.push({ id: d.id, attempt: d.attempt });
      else byJob.set(d.jobId, [{ id: d.id, attempt: d.attempt }]);
    }
    let redriven = 0;
    for (const [jobId, refs] of byJob) {
      if (await deliveryQueue.carries(jobId)) continue;
      await deliveryQueue.add([{ jobId, deliveries: refs }], this.opts.retentionSeconds);
      this.opts.logger.info({ kind: 'delivery', jobId, count: refs.length, first: refs[0]!.id }, 're-driven');
      redrives.inc({ kind: 'delivery' }, refs.length);
      redriven += refs.length;
    }
    // Alive or added again: either way their clocks restart, in one statement.
    await touchDeliveries(sql, deliveries);
    return { checked: deliveries.length, redriven };
  }
}
