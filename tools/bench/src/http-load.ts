import { performance } from 'node:perf_hooks';
import autocannon from 'autocannon';
import { type LatencySummary, summarize } from './stats.ts';

/**
 * HTTP load through autocannon over loopback: POST /quests/:questId {points, address} with the
 * owner's key. Each request picks its quest and account through `pick()`. Per response the
 * client records its latency (float ms, from autocannon's own hrtime stamps) and, for 200s, the
 * payout id in the body, so a run can be checked against the database exactly.
 */

export interface LoadOptions {
  baseUrl: string;
  apiKey: string;
  connections: number;
  /** Seconds (timed run) … */
  durationS?: number;
  /** … or an exact number of requests (every one is answered before the run ends). */
  amount?: number;
  pick: () => { questId: number; address: string };
  points?: number;
  /** Each payout answered 200, as it arrives: its quest, when its request was sent and answered (ms epoch). */
  onPayout?: (p: AckedPayout) => void;
  /** Called once the load started, with a function that ends it early (a timed run then ends at its `durationS` at the latest). */
  onStart?: (stop: () => void) => void;
}

export interface AckedPayout {
  id: string;
  questId: number;
  sentAt: number;
  ackAt: number;
}

/** autocannon's per-connection context: with pipelining 1 it describes the connection's one request in flight. */
interface InFlight {
  questId?: number;
  sentAt?: number;
}

export interface LoadResult {
  connections: number;
  elapsedS: number;
  sent: number;
  received: number;
  ok200: number;
  accepted202: number;
  /** Status code → count, for everything but 200 and 202. */
  otherStatus: Record<string, number>;
  /** Connection errors and timeouts reported by autocannon. */
  errors: number;
  timeouts: number;
  payoutIds: string[];
  latency: LatencySummary;
  /** Allocations answered 200 per second of the run. */
  rate: number;
  /** First few bodies of unexpected responses. */
  sampleErrors: string[];
}

const PAYOUT_ID = /"id":"(pay_[0-9a-z]+)"/;

export async function runLoad(opts: LoadOptions): Promise<LoadResult> {
  const latencies: number[] = [];
  const payoutIds: string[] = [];
  const otherStatus: Record<string, number> = {};
  const sampleErrors: string[] = [];
  let sent = 0;
  let received = 0;
  let ok200 = 0;
  let accepted202 = 0;
  const points = opts.points ?? 1;

  const t0 = performance.now();
  const tracker = autocannon({
    url: opts.baseUrl,
    connections: opts.connections,
    pipelining: 1,
    timeout: 30,
    ...(opts.amount ? { amount: opts.amount } : { duration: opts.durationS ?? 10 }),
    headers: { 'content-type': 'application/json', 'x-api-key': opts.apiKey },
    requests: [
      {
        method: 'POST',
        setupRequest: (req, context) => {
          const { questId, address } = opts.pick();
          const inFlight = context as InFlight;
          inFlight.questId = questId;
          inFlight.sentAt = Date.now();
          return { ...req, method: 'POST', path: `/quests/${questId}`, body: `{"points":${points},"address":"${address}"}` };
        },
        onResponse: (status, body, context) => {
          if (status === 200) {
            const m = PAYOUT_ID.exec(body);
            if (m) {
              payoutIds.push(m[1]!);
              const inFlight = context as InFlight;
              opts.onPayout?.({ id: m[1]!, questId: inFlight.questId!, sentAt: inFlight.sentAt!, ackAt: Date.now() });
            } else if (sampleErrors.length < 5) sampleErrors.push(`200 without payout id: ${body.slice(0, 300)}`);
          } else if (status !== 202 && sampleErrors.length < 5) {
            sampleErrors.push(`${status}: ${body.slice(0, 300)}`);
          }
        },
      },
    ],
    setupClient: (client) => {
      client.on('request' as never, () => {
        sent++;
      });
      client.on('response', (status, _bytes, ms) => {
        received++;
        if (status === 200) {
          ok200++;
          latencies.push(ms);
        } else if (status === 202) {
          accepted202++;
        } else {
          otherStatus[status] = (otherStatus[status] ?? 0) + 1;
        }
      });
    },
  });
  // Without a callback autocannon returns its instance made thenable; the types know only the promise.
  opts.onStart?.(() => (tracker as unknown as autocannon.Instance).stop());
  const result = await tracker;
  const elapsedS = (performance.now() - t0) / 1000;
  return {
    connections: opts.connections,
    elapsedS,
    sent,
    received,
    ok200,
    accepted202,
    otherStatus,
    errors: result.errors,
    timeouts: result.timeouts,
    payoutIds,
    latency: summarize(latencies),
    rate: ok200 / elapsedS,
    sampleErrors,
  };
}
