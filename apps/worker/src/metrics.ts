import { createServer, type Server } from 'node:http';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { deliveryCounts, type Sql, sessionsByState, unpublishedEvents } from '@quest/db';

/**
 * The worker's Prometheus metrics (docs/operations.md, "Metrics"), served on METRICS_PORT. Metric objects are
 * module singletons that the processor and the reconciler count into.
 */
export const registry = new Registry();
// The event-loop lag histogram samples every 50 ms instead of prom-client's 10: its timer woke the
// process 100 times a second, ~3.5 ms/s of CPU per idle process on this machine (docs/operations.md).
collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 50 });

export const decisionSeconds = new Histogram({
  name: 'quest_allocation_decision_seconds',
  help: 'Time from the API enqueuing an allocation to the worker deciding it (per item of allocate jobs).',
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
  registers: [registry],
});

export const jobItems = new Histogram({
  name: 'quest_job_items',
  help: 'Allocations per allocate job: how many requests the API coalesced into one job.',
  buckets: [1, 2, 5, 10, 25, 50, 100, 250, 500, 1000],
  registers: [registry],
});

export const redrives = new Counter({
  name: 'quest_redrives_total',
  help: 'Stranded work the reconciler enqueued again, by kind (request, batch, delivery).',
  labelNames: ['kind'] as const,
  registers: [registry],
});
// Both series exist from the start, so rate() sees the first re-drive.
for (const kind of ['request', 'batch', 'delivery']) redrives.inc({ kind }, 0);

export const deliveries = new Counter({
  name: 'quest_webhook_deliveries_total',
  help: 'Webhook delivery attempts by outcome: delivered (2xx), retry (failed, rescheduled), gave_up (failed past the retry window; the endpoint is failing).',
  labelNames: ['outcome'] as const,
  registers: [registry],
});
for (const outcome of ['delivered', 'retry', 'gave_up']) deliveries.inc({ outcome }, 0);

export const deliveryLagSeconds = new Histogram({
  name: 'quest_webhook_delivery_lag_seconds',
  help: "Time from an event's commit to its successful delivery (first or later attempt).",
  buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 3600, 86_400],
  registers: [registry],
});

export const eventsPublished = new Counter({
  name: 'quest_events_published_total',
  help: 'Events numbered by the publisher (visible in GET /events, fanned out to endpoints) by this worker.',
  registers: [registry],
});

export const webhookQueue = new Gauge({
  name: 'quest_webhook_queue_depth',
  help: 'Webhook work by where it waits (sampled every METRICS_SAMPLE_MS): queue = delivery jobs in Redis (each a group of up to WEBHOOK_DELIVERY_BATCH deliveries); postgres = pending deliveries not handed to the queue (due, or waiting for their next attempt); unpublished = events not yet numbered by the publisher.',
  labelNames: ['where'] as const,
  registers: [registry],
});

/** What the metrics read of the pool, at scrape time and from memory (no Redis call). */
export interface PoolView {
  owned: readonly number[];
  memberCount: number;
  /** A member serving its partitions now (not out of the pool, not fenced). */
  readonly isMember: boolean;
  health: { latencyMs: number };
  fenced: Readonly<Record<'redis' | 'unreachable' | 'slow', number>>;
  restarts: number;
  stalledSeconds(): Map<number, number>;
}

/** The pool's view, set by observePool. */
let poolView: { pool: PoolView; workerId: string } | undefined;

const poolMembers = new Gauge({
  name: 'quest_pool_members',
  help: 'Live members of the worker pool, as this worker saw them at its last heartbeat.',
  registers: [registry],
  collect() {
    if (poolView) this.set(poolView.pool.memberCount);
  },
});

const partitionsOwned = new Gauge({
  name: 'quest_pool_partitions_owned',
  help: 'Partitions this worker owns (runs a BullMQ worker for).',
  labelNames: ['worker'] as const,
  registers: [registry],
  collect() {
    if (poolView) this.set({ worker: poolView.workerId }, poolView.pool.owned.length);
  },
});

const poolMember = new Gauge({
  name: 'quest_pool_member',
  help: 'Whether this worker is a pool member now (1), or out of the pool because it cannot do the work (0): its database probe fails, or answers far slower than its peers.',
  registers: [registry],
  collect() {
    if (poolView) this.set(poolView.pool.isMember ? 1 : 0);
  },
});

const dbProbeSeconds = new Gauge({
  name: 'quest_db_probe_seconds',
  help: "Smoothed latency of this worker's database probe (one per heartbeat).",
  registers: [registry],
  collect() {
    if (poolView) this.set(poolView.pool.health.latencyMs / 1000);
  },
});

const poolFenced = new Counter({
  name: 'quest_pool_fenced_total',
  help: 'Times this worker dropped its partitions because it could not do the work: redis = its membership was not renewed in time (it fenced itself before the TTL let others in); unreachable = its database probes failed; slow = its database answered it far slower than its peers.',
  labelNames: ['reason'] as const,
  registers: [registry],
  collect() {
    if (!poolView) return;
    // The pool counts; a scrape copies its totals (a Counter cannot be set, so reset and add).
    this.reset();
    for (const [reason, n] of Object.entries(poolView.pool.fenced)) this.inc({ reason }, n);
  },
});

const partitionStalledSeconds = new Gauge({
  name: 'quest_partition_stalled_seconds',
  help: 'For each partition this worker owns: seconds since it last decided a job while jobs are waiting (0 when none wait). Alert when it stays above a few seconds.',
  labelNames: ['partition'] as const,
  registers: [registry],
  collect() {
    if (!poolView) return;
    this.reset();
    for (const [p, seconds] of poolView.pool.stalledSeconds()) this.set({ partition: String(p) }, seconds);
  },
});

const consumerRestarts = new Counter({
  name: 'quest_partition_consumer_restarts_total',
  help: 'Partition consumers this worker restarted because jobs waited and the consumer fetched none (WORKER_STALL_RESTART_MS).',
  registers: [registry],
  collect() {
    if (!poolView) return;
    this.reset();
    this.inc(poolView.pool.restarts);
  },
});

export const dbPoolConnections = new Gauge({
  name: 'quest_db_pool_connections',
  help: "This process's PostgreSQL sessions by state (from pg_stat_activity) and the pool size (state=max), sampled every METRICS_SAMPLE_MS.",
  labelNames: ['state'] as const,
  registers: [registry],
});

/** Report this pool's membership and ownership at each scrape. */
export function observePool(pool: PoolView, workerId: string): void {
  poolView = { pool, workerId };
}

/** Set the session gauge from one sample (see `sessionsByState`); state=max is the pool size. */
export async function sampleDbPool(sql: Sql, max: number): Promise<void> {
  const states = await sessionsByState(sql);
  dbPoolConnections.reset();
  dbPoolConnections.set({ state: 'max' }, max);
  for (const [state, n] of Object.entries(states)) dbPoolConnections.set({ state }, n);
}

/** Set the webhook gauge from one sample. */
export async function sampleWebhooks(sql: Sql, queueDepth: () => Promise<number>): Promise<void> {
  const [depth, counts, unpublished] = await Promise.all([queueDepth(), deliveryCounts(sql), unpublishedEvents(sql)]);
  webhookQueue.set({ where: 'queue' }, depth);
  webhookQueue.set({ where: 'postgres' }, counts.pending);
  webhookQueue.set({ where: 'unpublished' }, unpublished);
}

/** GET /metrics on its own port (any other path: 404). Resolves once listening. */
export async function serveMetrics(host: string, port: number): Promise<Server> {
  const server = createServer((req, res) => {
    if (req.method !== 'GET' || req.url?.split('?')[0] !== '/metrics') {
      res.writeHead(404).end();
      return;
    }
    registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(text),
      () => res.writeHead(500).end(),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return server;
}
