import type { FastifyPluginAsync } from 'fastify';
import fp from 'fastify-plugin';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { type Sql, sessionsByState } from '@quest/db';
import { producerConnection, QueueStatsReader } from '@quest/queue';

/**
 * The API's Prometheus metrics (docs/operations.md, "Metrics"). One registry per process: metric objects are
 * module singletons, so other parts of the API can count into them (e.g. `rateLimited.inc`).
 */
export const registry = new Registry();
// The event-loop lag histogram samples every 50 ms instead of prom-client's 10: its timer woke the
// process 100 times a second, ~3.5 ms/s of CPU per idle process on this machine (docs/operations.md).
collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 50 });

export const httpRequests = new Counter({
  name: 'quest_http_requests_total',
  help: 'HTTP requests answered, by route template, method and status code.',
  labelNames: ['route', 'method', 'status'] as const,
  registers: [registry],
});

export const httpDuration = new Histogram({
  name: 'quest_http_request_duration_seconds',
  help: 'Time from receiving a request to answering it, by route template and method.',
  labelNames: ['route', 'method'] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  registers: [registry],
});

export const allocations = new Counter({
  name: 'quest_allocations_total',
  help: 'Answers of POST /quests/{questId}: completed, rejected (code = rejection code), failed, or pending (202).',
  labelNames: ['outcome', 'code'] as const,
  registers: [registry],
});

export const reversals = new Counter({
  name: 'quest_reversals_total',
  help: 'Answers of POST /quests/{questId}/payouts/{payoutId}/reversals: reversed, rejected (code = rejection code), failed, or pending (202).',
  labelNames: ['outcome', 'code'] as const,
  registers: [registry],
});

export const replyFallbacks = new Counter({
  name: 'quest_reply_fallback_items_total',
  help: "Allocations and reversals whose wait ended without the worker's reply, by why (timeout, lost: the reply stream vanished, unreadable) and how they were answered (decided: found in PostgreSQL; pending: 202 or a failed job).",
  labelNames: ['reason', 'result'] as const,
  registers: [registry],
});

/** Count allocations whose wait ended without a reply, and how many of them the database had decided. */
export function countReplyFallback(e: { reason: string; items: number; decided: number }): void {
  if (e.decided) replyFallbacks.inc({ reason: e.reason, result: 'decided' }, e.decided);
  if (e.items > e.decided) replyFallbacks.inc({ reason: e.reason, result: 'pending' }, e.items - e.decided);
}

export const batchItems = new Counter({
  name: 'quest_batch_items_total',
  help: 'Items of the batches answered by POST /quests/{questId}/batches: completed, rejected, failed, or pending (202).',
  labelNames: ['outcome'] as const,
  registers: [registry],
});

/**
 * Requests refused by a rate limit. The rate limiter calls `rateLimited.inc({ scope })` for each
 * request it answers 429 (scope: what the limit is keyed on, e.g. `key`, `ip`, `quest`).
 */
export const rateLimited = new Counter({
  name: 'quest_rate_limited_total',
  help: 'Requests refused with 429 by a rate limit, by the scope of the limit.',
  labelNames: ['scope'] as const,
  registers: [registry],
});

export const queueWaiting = new Gauge({
  name: 'quest_queue_waiting_jobs',
  help: 'Jobs waiting in each partition queue (sampled every METRICS_SAMPLE_MS).',
  labelNames: ['partition'] as const,
  registers: [registry],
});
export const queueActive = new Gauge({
  name: 'quest_queue_active_jobs',
  help: 'Jobs being processed in each partition queue (sampled every METRICS_SAMPLE_MS).',
  labelNames: ['partition'] as const,
  registers: [registry],
});
export const queueOldestWait = new Gauge({
  name: 'quest_queue_oldest_wait_seconds',
  help: "Age of each partition queue's oldest waiting job, 0 when none waits (sampled every METRICS_SAMPLE_MS).",
  labelNames: ['partition'] as const,
  registers: [registry],
});

export const dbPoolConnections = new Gauge({
  name: 'quest_db_pool_connections',
  help: "This process's PostgreSQL sessions by state (from pg_stat_activity) and the pool size (state=max), sampled every METRICS_SAMPLE_MS.",
  labelNames: ['state'] as const,
  registers: [registry],
});

/** Set the session gauge from one sample (see `sessionsByState`); state=max is the pool size. */
async function sampleDbPool(sql: Sql, gauge: Gauge<'state'>, max: number): Promise<void> {
  const states = await sessionsByState(sql);
  gauge.reset();
  gauge.set({ state: 'max' }, max);
  for (const [state, n] of Object.entries(states)) gauge.set({ state }, n);
}

export interface MetricsPluginOptions {
  sql: Sql;
  redisUrl: string;
  prefix: string;
  partitions: number;
  dbPoolMax: number;
  /** How often queue depths and database sessions are sampled (0: never). */
  sampleMs: number;
}

/**
 * GET /metrics (Prometheus text format), the per-request counters, and the interval sampler of
 * queue depth and database sessions. A scrape only serializes what is already in memory.
 */
const metrics: FastifyPluginAsync<MetricsPluginOptions> = async (app, opts) => {
  app.addHook('onResponse', async (request, reply) => {
    // Unmatched URLs share one label value, so random paths cannot blow up the series count.
    const route = request.routeOptions.url ?? 'unmatched';
    httpRequests.inc({ route, method: request.method, status: String(reply.statusCode) });
    httpDuration.observe({ route, method: request.method }, reply.elapsedTime / 1000);
  });
  app.get('/metrics', { schema: { hide: true } }, async (_request, reply) => {
    reply.header('content-type', registry.contentType);
    return registry.metrics();
  });

  if (opts.sampleMs <= 0) return;
  const redis = producerConnection(opts.redisUrl);
  redis.on('error', () => {});
  const reader = new QueueStatsReader(redis, opts.prefix, opts.partitions);
  let sampling = false;
  const sample = async () => {
    if (sampling) return;
    sampling = true;
    try {
      const now = Date.now();
      const [queues] = await Promise.allSettled([reader.read(), sampleDbPool(opts.sql, dbPoolConnections, opts.dbPoolMax)]);
      if (queues.status === 'fulfilled') {
        for (const q of queues.value) {
          const partition = String(q.partition);
          queueWaiting.set({ partition }, q.waiting);
          queueActive.set({ partition }, q.active);
          queueOldestWait.set({ partition }, q.oldestWaitingAt ? Math.max(0, (now - q.oldestWaitingAt) / 1000) : 0);
        }
      }
    } finally {
      sampling = false;
    }
  };
  const timer = setInterval(() => void sample(), opts.sampleMs);
  timer.unref();
  void sample();
  app.addHook('onClose', async () => {
    clearInterval(timer);
    await reader.close();
    redis.disconnect();
  });
};
export const metricsPlugin = fp(metrics, { name: 'quest-metrics' });

/** Count one answer of POST /quests/{questId}. */
export function countAllocation(result: { status: string; code?: string }): void {
  allocations.inc({ outcome: result.status, code: result.status === 'rejected' ? (result.code ?? '') : '' });
}

/** Count one answer of POST /quests/{questId}/payouts/{payoutId}/reversals. */
export function countReversal(result: { status: string; code?: string }): void {
  reversals.inc({ outcome: result.status, code: result.status === 'rejected' ? (result.code ?? '') : '' });
}

/** Count the items of one answer of POST /quests/{questId}/batches by how they ended (as answered). */
export function countBatchItems(row: {
  status: string;
  total: number;
  processed: number;
  succeeded: number;
  failed: number;
}): void {
  if (row.status === 'completed') {
    if (row.succeeded) batchItems.inc({ outcome: 'completed' }, row.succeeded);
    if (row.failed) batchItems.inc({ outcome: 'rejected' }, row.failed);
  } else if (row.status === 'failed') {
    if (row.succeeded) batchItems.inc({ outcome: 'completed' }, row.succeeded);
    if (row.failed) batchItems.inc({ outcome: 'rejected' }, row.failed);
    if (row.total > row.processed) batchItems.inc({ outcome: 'failed' }, row.total - row.processed);
  } else {
    batchItems.inc({ outcome: 'pending' }, row.total);
  }
}
