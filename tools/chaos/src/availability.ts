import type { Cluster } from './cluster.ts';

/**
 * How well the partitions were served through a fault (issue 29's goal): each partition's decision
 * rate before the fault (the warm-up), the time from the fault's start until *every* partition
 * decided at ≥ 50 % of its earlier rate again (over a sliding 1 s window), and the longest gap
 * between two decisions of a partition after the heal. Read from the payouts' commit times.
 */
export interface Availability {
  /** Fault start → every partition at ≥ 50 % of its rate before; undefined: not during the fault. */
  halfRateMs: number | undefined;
  /** Longest silence of any partition between the heal and the end of the load (ms). */
  longestGapAfterHealMs: number;
}

const WINDOW_MS = 1000;
const STEP_MS = 100;

/** Pure: from each partition's decision times (ms, sorted). */
export function availability(
  decisions: ReadonlyMap<number, readonly number[]>,
  t: { warmupFrom: number; injectedAt: number; faultEnd: number; loadEnd: number },
): Availability {
  let halfRateMs: number | undefined = 0;
  let longestGapAfterHealMs = 0;
  for (const times of decisions.values()) {
    const before = times.filter((x) => x >= t.warmupFrom && x < t.injectedAt).length;
    const rate = before / Math.max(1, t.injectedAt - t.warmupFrom); // decisions per ms
    const need = 0.5 * rate * WINDOW_MS;
    let found: number | undefined;
    for (let from = t.injectedAt; from + WINDOW_MS <= t.faultEnd; from += STEP_MS) {
      const n = times.filter((x) => x >= from && x < from + WINDOW_MS).length;
      if (n >= need && n > 0) {
        found = from + WINDOW_MS - t.injectedAt;
        break;
      }
    }
    if (found === undefined) halfRateMs = undefined;
    else if (halfRateMs !== undefined) halfRateMs = Math.max(halfRateMs, found);
    let last = t.faultEnd;
    for (const x of times) {
      if (x < t.faultEnd || x > t.loadEnd) continue;
      longestGapAfterHealMs = Math.max(longestGapAfterHealMs, x - last);
      last = x;
    }
    longestGapAfterHealMs = Math.max(longestGapAfterHealMs, t.loadEnd - last);
  }
  return { halfRateMs, longestGapAfterHealMs };
}

export async function measureAvailability(
  c: Cluster,
  t: { warmupFrom: number; injectedAt: number; faultEnd: number; loadEnd: number },
): Promise<Availability> {
  const partitions = Number(c.env.QUEUE_PARTITIONS);
  const rows = await c.sql<{ quest_id: number; at: Date }[]>`
    select quest_id, created_at as at from payouts
     where quest_id = any(${c.questIds}::int[]) and created_at >= ${new Date(t.warmupFrom)} order by created_at`;
  const decisions = new Map<number, number[]>();
  for (const q of c.questIds) decisions.set(q % partitions, []);
  for (const r of rows) decisions.get(r.quest_id % partitions)?.push(r.at.getTime());
  return availability(decisions, t);
}

export function formatAvailability(a: Availability): string {
  const half = a.halfRateMs === undefined ? 'never during the fault' : `${(a.halfRateMs / 1000).toFixed(1)} s`;
  return `every partition ≥ 50 % of its rate again after ${half}; longest gap after the heal ${(a.longestGapAfterHealMs / 1000).toFixed(1)} s`;
}
