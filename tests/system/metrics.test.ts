import { readFileSync } from 'node:fs';
import { describe, expect, vi } from 'vitest';
import { Redis } from 'ioredis';
import { deleteKeysWithPrefix } from '@quest/queue';
import { freePort, parseMetrics, post, REPO_ROOT, systemTest } from '@quest/testing';

// No worker at first and a short wait: the first requests are answered 202 and stay queued.
const test = systemTest({
  workers: 0,
  partitions: 4,
  env: {
    ALLOCATION_WAIT_MS: '1500',
    BATCH_WAIT_MS: '1500',
    METRICS_SAMPLE_MS: '100',
    RECONCILER_INTERVAL_MS: '200',
    RECONCILER_MIN_AGE_MS: '300',
  },
});

/**
 * Every PromQL expression the shipped dashboard and alert rules query. The alert file is read
 * line by line (`expr:` keys hold one-line expressions), so no YAML parser is needed.
 */
function shippedQueries(): string[] {
  const dashboard = JSON.parse(readFileSync(`${REPO_ROOT}ops/grafana/dashboards/quest-rewards.json`, 'utf8'));
  const fromDashboard = dashboard.panels.flatMap((p: { targets: { expr: string }[] }) => p.targets.map((t) => t.expr));
  const alerts = readFileSync(`${REPO_ROOT}ops/prometheus/alerts.yml`, 'utf8');
  const fromAlerts = [...alerts.matchAll(/^\s*expr:\s*(.+)$/gm)].map((m) => m[1]!);
  return [...fromDashboard, ...fromAlerts];
}

/** Metric names in a PromQL expression: identifiers that are not functions, keywords or label names. */
function metricNames(expr: string): string[] {
  const withoutStrings = expr
    .replace(/"[^"]*"/g, '""')
    .replace(/\{[^}]*\}/g, '{}')
    .replace(/\[[^\]]*\]/g, '[]');
  const withoutGrouping = withoutStrings.replace(/\b(by|without)\s*\([^)]*\)/g, '');
  return [...withoutGrouping.matchAll(/\b([a-zA-Z_:][\w:]*)\b(?!\s*\()/g)]
    .map((m) => m[1]!)
    .filter((name) => /_/.test(name) && !/^\$__/.test(name));
}

const scrape = async (url: string) => {
  const res = await fetch(url);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
  return parseMetrics(await res.text());
};

describe('GET /metrics', () => {
  test('the API and a worker expose every documented family, with live values after some allocations', async ({
    system,
    owner,
    makeQuest,
    accounts,
  }) => {
    const api = () => scrape(`${system.baseUrl}/metrics`);
    const questId = await makeQuest({ totalPoints: 1_000 });
    const headers = { 'x-api-key': owner.apiKey };

    // No worker: answered 202, and the sampler sees the queued job waiting.
    const queued = await post(system, `/quests/${questId}`, { points: 1, address: accounts[0] }, headers);
    expect(queued.status).toBe(202);
    const batch = await post(
      system,
      `/quests/${questId}/batches`,
      { allocations: [{ address: accounts[1]!.toLowerCase(), points: 2 }] },
      headers,
    );
    expect(batch.status).toBe(202);
    await vi.waitFor(
      async () => {
        const m = await api();
        expect(m.sum('quest_queue_waiting_jobs')).toBeGreaterThan(0);
        expect(Math.max(...m.values('quest_queue_oldest_wait_seconds'))).toBeGreaterThan(0);
        expect(m.values('quest_queue_active_jobs')).toHaveLength(4);
      },
      { timeout: 20_000, interval: 100 },
    );
    // Redis loses the queued jobs: the reconciler of the worker that joins re-drives them.
    const redis = new Redis(system.redis.url);
    try {
      await deleteKeysWithPrefix(redis, system.redis.prefix);
    } finally {
      redis.disconnect();
    }

    const metricsPort = await freePort();
    await system.startWorker({ METRICS_PORT: String(metricsPort) });
    const worker = () => scrape(`http://127.0.0.1:${metricsPort}/metrics`);

    // Decided now (retried while a loaded machine answers 202 instead).
    let decidedRequestId = '';
    let payoutId = '';
    await vi.waitFor(
      async () => {
        const ok = await post(system, `/quests/${questId}`, { points: 1, address: accounts[2] }, headers);
        expect(ok.status).toBe(200);
        decidedRequestId = ok.headers.get('x-request-id')!;
        payoutId = ok.body.payout.id;
      },
      { timeout: 30_000, interval: 100 },
    );
    // Connected logs: one grep of the request id finds the API's request line and the worker's decision.
    const grep = (output: string) => output.split('\n').filter((l) => l.includes(decidedRequestId));
    await vi.waitFor(() => {
      expect(grep(system.api.output()).map((l) => JSON.parse(l).msg)).toContain('request completed');
      const decision = grep(system.workers[0]!.output()).map((l) => JSON.parse(l));
      expect(decision).toHaveLength(1);
      expect(decision[0]).toMatchObject({
        msg: 'allocations decided',
        jobId: expect.any(String),
        partition: expect.any(Number),
        durationMs: expect.any(Number),
        outcomes: { completed: expect.any(Number) },
      });
      expect(decision[0].requestIds).toContain(decidedRequestId);
    });
    await vi.waitFor(
      async () => {
        const no = await post(system, `/quests/${questId}`, { points: 1_000_000, address: accounts[3] }, headers);
        expect(no.body.code).toBe('INSUFFICIENT_POINTS');
      },
      { timeout: 30_000, interval: 100 },
    );
    await vi.waitFor(
      async () => {
        const done = await post(
          system,
          `/quests/${questId}/batches`,
          { allocations: [{ address: accounts[4]!.toLowerCase(), points: 3 }] },
          headers,
        );
        expect(done.status).toBe(200);
      },
      { timeout: 30_000, interval: 100 },
    );

    // A reversal of that payout (its key replays it if a loaded machine answered 202 first).
    await vi.waitFor(
      async () => {
        const reversed = await post(
          system,
          `/quests/${questId}/payouts/${payoutId}/reversals`,
          {},
          {
            ...headers,
            'idempotency-key': 'metrics-reversal',
          },
        );
        expect(reversed.status).toBe(200);
      },
      { timeout: 30_000, interval: 100 },
    );

    const m = await api();
    const route = '/quests/:questId';
    expect(m.sum('quest_http_requests_total', { route, method: 'POST', status: '200' })).toBeGreaterThan(0);
    expect(m.sum('quest_http_request_duration_seconds_count', { route, method: 'POST' })).toBeGreaterThan(0);
    expect(m.sum('quest_allocations_total', { outcome: 'pending' })).toBeGreaterThan(0);
    expect(m.sum('quest_allocations_total', { outcome: 'completed' })).toBeGreaterThan(0);
    expect(m.sum('quest_allocations_total', { outcome: 'rejected', code: 'INSUFFICIENT_POINTS' })).toBeGreaterThan(0);
    expect(m.sum('quest_batch_items_total', { outcome: 'pending' })).toBeGreaterThan(0);
    expect(m.sum('quest_batch_items_total', { outcome: 'completed' })).toBeGreaterThan(0);
    expect(m.sum('quest_reversals_total', { outcome: 'reversed' })).toBeGreaterThan(0);
    expect(m.families).toContain('quest_rate_limited_total');
    expect(m.values('quest_db_pool_connections', { state: 'max' })).toEqual([4]);
    expect(m.sum('quest_db_pool_connections', { state: 'active' })).toBeGreaterThan(0);
    expect(m.values('process_resident_memory_bytes')[0]).toBeGreaterThan(0);
    expect(m.families).toContain('nodejs_eventloop_lag_seconds');

    await vi.waitFor(
      async () => {
        const w = await worker();
        expect(w.sum('quest_allocation_decision_seconds_count')).toBeGreaterThan(0);
        expect(w.sum('quest_allocation_decision_seconds_sum')).toBeGreaterThan(0);
        expect(w.sum('quest_job_items_count')).toBeGreaterThan(0);
        expect(w.values('quest_pool_members')).toEqual([1]);
        expect(w.values('quest_pool_partitions_owned')).toEqual([4]);
        expect(w.sum('quest_redrives_total', { kind: 'request' })).toBeGreaterThan(0);
        expect(w.sum('quest_redrives_total', { kind: 'batch' })).toBeGreaterThan(0);
        expect(w.values('quest_db_pool_connections', { state: 'max' })).toEqual([4]);
        expect(w.values('process_resident_memory_bytes')[0]).toBeGreaterThan(0);
      },
      { timeout: 20_000, interval: 100 },
    );
    // Every metric the dashboard and the alert rules query exists in the API's or a worker's output.
    const [a, w] = [await api(), await worker()];
    const exposed = new Set([...a.families, ...w.families, ...[...a.samples, ...w.samples].map((s) => s.name)]);
    const queries = shippedQueries();
    expect(queries.length).toBeGreaterThan(10);
    const queried = new Set(queries.flatMap(metricNames));
    expect([...queried].filter((name) => name.startsWith('quest_')).length).toBeGreaterThan(10);
    expect([...queried].filter((name) => !exposed.has(name))).toEqual([]);

    // Any other path of the worker's metrics port is not found.
    expect((await fetch(`http://127.0.0.1:${metricsPort}/`)).status).toBe(404);
  });
});
