/**
 * Whether a worker should stay a member of the partition pool: the pure rule behind the pool's
 * heartbeat (apps/worker/src/pool/pool.ts). Each heartbeat the worker probes PostgreSQL with a
 * deadline and reports the probe's latency beside its membership; every member reads its peers'
 * reports. A worker leaves the pool (its partitions go to the others within one heartbeat) when
 *
 * - **unreachable**: `failAfter` probes in a row failed or missed their deadline (a blackholed or
 *   refused database, a wedged pool); or
 * - **slow**: for `slowAfter` heartbeats in a row its smoothed latency was above both `slowFloorMs`
 *   and `slowFactor` × the median of its healthy peers' (a failed probe leaves the average as it
 *   was; the first answer after failures replaces it) — slow *compared with the others*, so a
 *   database that is slow for everyone moves nothing and nothing flaps on a fixed threshold;
 *
 * and only while at least one healthy peer is there to take its partitions (a lone worker serving
 * slowly beats no worker). It rejoins after `recoverAfter` good heartbeats in a row.
 */

export interface HealthPolicy {
  /** Failed probes in a row that make a worker unreachable. */
  failAfter: number;
  /** Heartbeats in a row over the relative threshold that make a worker slow. */
  slowAfter: number;
  /** Slow means over `slowFactor` × the peers' median latency… */
  slowFactor: number;
  /** …and over this many milliseconds. */
  slowFloorMs: number;
  /** Good heartbeats in a row after which a worker that left rejoins. */
  recoverAfter: number;
}

export const DEFAULT_HEALTH_POLICY: HealthPolicy = {
  failAfter: 2,
  slowAfter: 3,
  slowFactor: 10,
  slowFloorMs: 250,
  recoverAfter: 2,
};

export type HealthVerdict = 'healthy' | 'unreachable' | 'slow';

export interface HealthState {
  /** Smoothed latency (ms) of the answered probes. */
  latencyMs: number;
  failures: number;
  slowBeats: number;
  goodBeats: number;
  /** Whether the worker is (wants to be) a member. */
  member: boolean;
  verdict: HealthVerdict;
}

export const INITIAL_HEALTH: HealthState = {
  latencyMs: 0,
  failures: 0,
  slowBeats: 0,
  goodBeats: 0,
  member: true,
  verdict: 'healthy',
};

export interface ProbeSample {
  ok: boolean;
  latencyMs: number;
}

export function median(values: readonly number[]): number {
  if (!values.length) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/**
 * The next state after one heartbeat's probe. `peers` are the smoothed latencies of the *other*
 * members that are healthy now; an empty list means no one could take over.
 */
export function nextHealth(
  state: HealthState,
  sample: ProbeSample,
  peers: readonly number[],
  policy: HealthPolicy = DEFAULT_HEALTH_POLICY,
): HealthState {
  // Smooth over two beats: one slow probe (a checkpoint, a GC pause) moves the average by half. A
  // failed probe says nothing about latency; the first answer after failures starts afresh.
  const latencyMs = !sample.ok
    ? state.latencyMs
    : state.latencyMs === 0 || state.failures > 0
      ? sample.latencyMs
      : (state.latencyMs + sample.latencyMs) / 2;
  const failures = sample.ok ? 0 : state.failures + 1;
  const reference = median(peers);
  // A probe that missed its deadline was at least that slow: evidence for the relative rule too,
  // so a worker whose answers alternate between slow and too slow does not slip between both rules.
  const observed = sample.ok ? latencyMs : Math.max(latencyMs, sample.latencyMs);
  const overPeers = peers.length > 0 && observed > policy.slowFloorMs && observed > policy.slowFactor * reference;
  const slowBeats = overPeers ? state.slowBeats + 1 : 0;
  const verdict: HealthVerdict =
    failures >= policy.failAfter ? 'unreachable' : slowBeats >= policy.slowAfter ? 'slow' : 'healthy';
  const good = sample.ok && !overPeers;
  const goodBeats = good ? state.goodBeats + 1 : 0;
  let member = state.member;
  if (member && verdict !== 'healthy' && peers.length > 0) member = false;
  else if (!member && (peers.length === 0 || goodBeats >= policy.recoverAfter)) member = true;
  return { latencyMs, failures, slowBeats, goodBeats, member, verdict };
}
