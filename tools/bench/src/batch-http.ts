import { performance } from 'node:perf_hooks';

/**
 * Batch crediting through the API: POST /quests/:questId/batches with `batchSize` items each,
 * `concurrency` requests in flight. A batch is complete when its POST answers 200 (completed), or,
 * for a 202, when GET /quests/:questId/batches/:batchId first reports it completed (polled every
 * 20 ms). End to end = first request sent → last batch complete. Per-item results (payout ids)
 * are collected afterwards for the exact check; that paging is not timed.
 */

export interface BatchHttpResult {
  concurrency: number;
  batches: number;
  items: number;
  elapsedS: number;
  /** Credits (completed items) per second, end to end. */
  rate: number;
  answered200: number;
  answered202: number;
  otherStatus: Record<string, number>;
  failedBatches: number;
  succeeded: number;
  failed: number;
  payoutIds: string[];
  /** Per batch: ms from its POST to its completion. */
  batchMs: number[];
  sampleErrors: string[];
}

interface BatchView {
  id: string;
  status: 'pending' | 'processing' | 'completed' | 'failed';
  total: number;
  processed: number;
  succeeded: number;
  failed: number;
  results?: { index: number; status: string; payout?: { id: string } }[];
}

export async function runBatchesHttp(opts: {
  baseUrl: string;
  apiKey: string;
  questId: number;
  addresses: readonly string[];
  batchSize: number;
  concurrency: number;
  points?: number;
}): Promise<BatchHttpResult> {
  const points = opts.points ?? 1;
  const bodies: string[] = [];
  for (let i = 0; i < opts.addresses.length; i += opts.batchSize) {
    const allocations = opts.addresses.slice(i, i + opts.batchSize).map((address) => ({ address, points }));
    bodies.push(JSON.stringify({ allocations }));
  }
  const headers = { 'content-type': 'application/json', 'x-api-key': opts.apiKey };
  const otherStatus: Record<string, number> = {};
  const sampleErrors: string[] = [];
  const views: (BatchView | undefined)[] = new Array(bodies.length);
  const inline: boolean[] = new Array(bodies.length).fill(false);
  const batchMs: number[] = [];
  let answered200 = 0;
  let answered202 = 0;
  let next = 0;

  const t0 = performance.now();
  let tEnd = t0;
  const sender = async () => {
    for (;;) {
      const i = next++;
      if (i >= bodies.length) return;
      const s = performance.now();
      const res = await fetch(`${opts.baseUrl}/quests/${opts.questId}/batches`, { method: 'POST', headers, body: bodies[i] });
      const text = await res.text();
      if (res.status !== 200 && res.status !== 202) {
        otherStatus[res.status] = (otherStatus[res.status] ?? 0) + 1;
        if (sampleErrors.length < 5) sampleErrors.push(`${res.status}: ${text.slice(0, 300)}`);
        continue;
      }
      let view = (JSON.parse(text) as { batch: BatchView }).batch;
      if (res.status === 200) {
        answered200++;
        inline[i] = true;
      } else {
        answered202++;
        while (view.status !== 'completed' && view.status !== 'failed') {
          await new Promise((r) => setTimeout(r, 20));
          const poll = await fetch(`${opts.baseUrl}/quests/${opts.questId}/batches/${view.id}?limit=1`, { headers });
          view = ((await poll.json()) as { batch: BatchView }).batch;
        }
      }
      const done = performance.now();
      batchMs.push(done - s);
      tEnd = Math.max(tEnd, done);
      views[i] = view;
    }
  };
  await Promise.all(Array.from({ length: Math.min(opts.concurrency, bodies.length) }, sender));
  const elapsedS = (tEnd - t0) / 1000;

  // Exact results, untimed: the 200s carried them; page through the others.
  const payoutIds: string[] = [];
  let succeeded = 0;
  let failed = 0;
  let failedBatches = 0;
  for (let i = 0; i < views.length; i++) {
    const view = views[i];
    if (!view) continue;
    succeeded += view.succeeded;
    failed += view.failed;
    if (view.status !== 'completed') failedBatches++;
    let results = inline[i] ? (view.results ?? []) : [];
    if (!inline[i]) {
      for (let offset = 0; offset < view.total; offset += 1000) {
        const page = await fetch(`${opts.baseUrl}/quests/${opts.questId}/batches/${view.id}?limit=1000&offset=${offset}`, {
          headers,
        });
        results = results.concat(((await page.json()) as { batch: BatchView }).batch.results ?? []);
      }
    }
    for (const r of results) if (r.status === 'completed' && r.payout) payoutIds.push(r.payout.id);
  }
  return {
    concurrency: opts.concurrency,
    batches: bodies.length,
    items: opts.addresses.length,
    elapsedS,
    rate: succeeded / elapsedS,
    answered200,
    answered202,
    otherStatus,
    failedBatches,
    succeeded,
    failed,
    payoutIds,
    batchMs,
    sampleErrors,
  };
}
