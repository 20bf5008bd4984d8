import { performance } from 'node:perf_hooks';
import { Pool } from 'undici';
import type { LoadResult } from './http-load.ts';
import { summarize } from './stats.ts';

/**
 * Open-loop HTTP load: POST /quests/:questId at a constant arrival rate, whatever the answers do —
 * request i is due at t0 + i / rate, and its latency is counted from that due time, not from when
 * it could be sent (so a server that falls behind shows it in the latency, instead of quietly
 * being sent less: no coordinated omission). Real clients arrive like this; a closed loop of N
 * connections never has more than N requests in flight.
 *
 * Written here, on undici's connection pool, because autocannon's `overallRate` is not a constant
 * arrival rate: it gives each connection a quota per second, which every connection spends at the
 * start of the second, back to back — a burst of the whole connection count each second (its
 * lib/httpClient.js rate interval).
 */

export interface OpenLoopOptions {
  baseUrl: string;
  apiKey: string;
  /** Requests per second, sent evenly. */
  rate: number;
  durationS: number;
  /** Connections at most; requests due while all are busy queue in the pool (and their wait counts). */
  connections: number;
  pick: () => { questId: number; address: string };
  /** Give up on a request after this long (counted as a timeout). */
  timeoutMs?: number;
  /**
   * A pool to reuse (its connections stay open from one run to the next: a ladder of steps does not
   * pay connection set-up at every step); the run then neither makes nor closes one.
   */
  pool?: Pool;
}

/** A connection pool for runOpenLoop's `pool`, up to `connections` connections. */
export function openLoopPool(baseUrl: string, connections: number, timeoutMs = 30_000): Pool {
  return new Pool(baseUrl, { connections, pipelining: 1, headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
}

const PAYOUT_ID = /"id":"(pay_[0-9a-z]+)"/;

export async function runOpenLoop(opts: OpenLoopOptions): Promise<LoadResult & { due: number }> {
  const pool = opts.pool ?? openLoopPool(opts.baseUrl, opts.connections, opts.timeoutMs);
  const latencies: number[] = [];
  const payoutIds: string[] = [];
  const otherStatus: Record<string, number> = {};
  const sampleErrors: string[] = [];
  let sent = 0;
  let received = 0;
  let ok200 = 0;
  let accepted202 = 0;
  let errors = 0;
  let timeouts = 0;
  const inFlight = new Set<Promise<void>>();
  const intervalMs = 1000 / opts.rate;
  const total = Math.round(opts.rate * opts.durationS);

  const send = (dueAt: number) => {
    const { questId, address } = opts.pick();
    sent++;
    const p = pool
      .request({
        method: 'POST',
        path: `/quests/${questId}`,
        headers: { 'content-type': 'application/json', 'x-api-key': opts.apiKey },
        body: `{"points":1,"address":"${address}"}`,
      })
      .then(async (res) => {
        const body = await res.body.text();
        received++;
        if (res.statusCode === 200) {
          ok200++;
          latencies.push(performance.now() - dueAt);
          const m = PAYOUT_ID.exec(body);
          if (m) payoutIds.push(m[1]!);
          else if (sampleErrors.length < 5) sampleErrors.push(`200 without payout id: ${body.slice(0, 300)}`);
        } else if (res.statusCode === 202) {
          accepted202++;
        } else {
          otherStatus[res.statusCode] = (otherStatus[res.statusCode] ?? 0) + 1;
          if (sampleErrors.length < 5) sampleErrors.push(`${res.statusCode}: ${body.slice(0, 300)}`);
        }
      })
      .catch((error: { code?: string; message?: string }) => {
        if (error.code === 'UND_ERR_HEADERS_TIMEOUT' || error.code === 'UND_ERR_BODY_TIMEOUT') timeouts++;
        else errors++;
        if (sampleErrors.length < 5) sampleErrors.push(String(error.message ?? error));
      })
      .finally(() => inFlight.delete(p));
    inFlight.add(p);
  };

  const t0 = performance.now();
  await new Promise<void>((resolve) => {
    // Every millisecond or so, send what has fallen due; each keeps its own due time.
    const tick = () => {
      const now = performance.now();
      while (sent < total && t0 + sent * intervalMs <= now) send(t0 + sent * intervalMs);
      if (sent >= total) resolve();
      else setTimeout(tick, Math.max(0, Math.min(intervalMs, t0 + sent * intervalMs - performance.now())));
    };
    tick();
  });
  await Promise.all(inFlight);
  const elapsedS = (performance.now() - t0) / 1000;
  if (!opts.pool) await pool.close();
  return {
    connections: opts.connections,
    elapsedS,
    sent,
    received,
    ok200,
    accepted202,
    otherStatus,
    errors,
    timeouts,
    payoutIds,
    latency: summarize(latencies),
    // Answered allocations per second of the schedule (the run's length is its schedule's, not the tail's).
    rate: ok200 / opts.durationS,
    sampleErrors,
    due: total,
  };
}
