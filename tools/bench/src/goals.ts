import type { BenchConfig } from './config.ts';
import type { ScenarioOutput } from './context.ts';
import { AUDIT_GOAL_S, IMPORT_GOAL_S } from './scenarios/admin.ts';
import { formatValue, groupThousands, markdownTable, type Row, type Unit } from './stats.ts';

/**
 * The goals table (reported, not asserted): each goal names the figure it reads from the results
 * table, the target and the comparison. A goal whose rows were not measured in this run says so.
 */

/** What a goal compares (`value`) and what the table shows for it (`text`). */
export interface Figure {
  value: number;
  text: string;
}

export interface Goal {
  name: string | ((cfg: BenchConfig) => string);
  /** The figure from this run's rows; undefined when they were not measured. */
  figure(rows: Results): Figure | undefined;
  compare: '<=' | '<' | '>=';
  target: number;
}

/** The rows of one run, looked up by scenario and the start of a metric's name. */
export class Results {
  constructor(readonly outputs: readonly ScenarioOutput[]) {}

  find(scenario: string, metric: string): Row | undefined {
    return this.outputs.flatMap((o) => o.rows).find((r) => r.scenario === scenario && r.metric.startsWith(metric));
  }

  /** Every row of a scenario whose metric starts with `metric` ('' for all). */
  all(scenario: string, metric = ''): Row[] {
    return (this.outputs.find((o) => o.name === scenario)?.rows ?? []).filter((r) => r.metric.startsWith(metric));
  }
}

const num = (r: Row | undefined) => (typeof r?.service === 'number' ? r.service : undefined);

/** The service's own figure. */
const measured =
  (scenario: string, metric: string, unit: Unit) =>
  (res: Results): Figure | undefined => {
    const v = num(res.find(scenario, metric));
    return v === undefined ? undefined : { value: v, text: formatValue(v, unit) };
  };

/** service ÷ limit; shown as "service = ratio × limit", or the bare ratio. */
const ofLimit =
  (scenario: string, metric: string, unit: Unit, show: 'both' | 'ratio' = 'both') =>
  (res: Results): Figure | undefined => {
    const r = res.find(scenario, metric);
    const v = num(r);
    if (v === undefined || typeof r?.limit !== 'number' || !(r.limit > 0)) return undefined;
    const x = v / r.limit;
    return {
      value: x,
      text: show === 'ratio' ? x.toFixed(2) : `${formatValue(v, unit)} = ${x.toFixed(2)} × ${formatValue(r.limit, unit)}`,
    };
  };

/**
 * service ÷ a side's figure in the same row: the reference service (a plain synchronous Fastify +
 * postgres.js service) or the obvious-queue peer (one BullMQ job per request, `waitUntilFinished`).
 */
const versus =
  (side: 'reference' | 'peer', scenario: string, metric: string, unit: Unit) =>
  (res: Results): Figure | undefined => {
    const r = res.find(scenario, metric);
    const v = num(r);
    const other = r?.[side];
    if (v === undefined || typeof other !== 'number' || !(other > 0)) return undefined;
    const x = v / other;
    return { value: x, text: `${formatValue(v, unit)} vs ${formatValue(other, unit)} = ${x.toFixed(2)}×` };
  };

const ofReference = (scenario: string, metric: string, unit: Unit) => versus('reference', scenario, metric, unit);
const ofPeer = (scenario: string, metric: string, unit: Unit) => versus('peer', scenario, metric, unit);

/** The CLI's time, with the in-process limit's (the @quest/db function it calls) in brackets. */
const cliBesideLimit =
  (scenario: string, metric: string, limitName: string) =>
  (res: Results): Figure | undefined => {
    const r = res.find(scenario, metric);
    const v = num(r);
    return v === undefined
      ? undefined
      : { value: v, text: `${formatValue(v, 's')} (${limitName} ${formatValue(r!.limit, 's')})` };
  };

/** The largest peak RSS of any process: the API and workers during throughput, the quest-admin credit CLI. */
const maxRss = (res: Results): Figure | undefined => {
  const rows = [...res.all('memory'), ...res.all('batch', 'quest-admin credit peak RSS')];
  if (!rows.length) return undefined;
  const max = Math.max(...rows.map((r) => num(r) ?? 0));
  return { value: max, text: `max ${formatValue(max, 'MB')}` };
};

/** One row's service figure ÷ another's (same or another scenario), shown with both. */
const ratioOf =
  (a: [scenario: string, metric: string], b: [scenario: string, metric: string], unit: Unit) =>
  (res: Results): Figure | undefined => {
    const x = num(res.find(...a));
    const y = num(res.find(...b));
    if (x === undefined || y === undefined || !(y > 0)) return undefined;
    return { value: x / y, text: `${formatValue(x, unit)} vs ${formatValue(y, unit)} = ${(x / y).toFixed(2)}×` };
  };

/** A lone request's p50 against the reference's p50 plus the queue floor's (both measured in the run). */
const latencyOverFloor = (res: Results): Figure | undefined => {
  const p50 = res.find('latency', 'p50');
  const x = num(res.find('latency', 'p50 ÷ (reference p50 + queue floor p50)'));
  const floor = res.find('latency', 'queue floor p50');
  if (x === undefined || typeof p50?.service !== 'number' || typeof p50.reference !== 'number') return undefined;
  return {
    value: x,
    text: `${formatValue(p50.service, 'ms')} vs ${formatValue(p50.reference, 'ms')} + ${String(floor?.service ?? '?').split(' / ')[0]} = ${x.toFixed(2)}×`,
  };
};

const SINGLE = 'allocations/s (limit: single';
const COALESCED = 'allocations/s (limit: coalesced';

export const GOALS: Goal[] = [
  { name: '1. latency p50 ≤ 3 ms', figure: measured('latency', 'p50', 'ms'), compare: '<=', target: 3 },
  { name: '1. latency p99 ≤ 15 ms', figure: measured('latency', 'p99', 'ms'), compare: '<=', target: 15 },
  { name: '2. throughput ≥ 0.5 × single-item limit', figure: ofLimit('throughput', SINGLE, '/s'), compare: '>=', target: 0.5 },
  {
    name: 'lone request: p50 ≤ lean reference p50 + queue floor p50',
    figure: latencyOverFloor,
    compare: '<=',
    target: 1,
  },
  { name: 'latency p99 ≤ 1.5 × reference p99', figure: ofReference('latency', 'p99', 'ms'), compare: '<=', target: 1.5 },
  {
    name: 'CPU per lone allocation ≤ 2 × lean reference',
    figure: ofReference('latency', 'CPU per allocation', 'ms'),
    compare: '<=',
    target: 2,
  },
  { name: 'throughput ≥ 2 × reference', figure: ofReference('throughput', SINGLE, '/s'), compare: '>=', target: 2 },
  {
    name: 'open loop, 1,000 quests: highest sustained rate ≥ 2 × lean reference',
    figure: ofReference('open-loop', 'highest sustained rate', '/s'),
    compare: '>=',
    target: 2,
  },
  {
    name: 'throughput ≥ 0.6 × coalesced-lists limit',
    figure: ofLimit('throughput', COALESCED, '/s', 'ratio'),
    compare: '>=',
    target: 0.6,
  },
  {
    name: 'reversals mixed in: reversal p99 ≤ 1.5 × allocation p99 (same run)',
    figure: ratioOf(['reversals', 'reversal p99'], ['reversals', 'allocation p99'], 'ms'),
    compare: '<=',
    target: 1.5,
  },
  {
    name: 'reversals mixed in: allocations/s ≥ 0.8 × throughput alone',
    figure: ratioOf(['reversals', 'allocations/s'], ['throughput', SINGLE], '/s'),
    compare: '>=',
    target: 0.8,
  },
  { name: 'hot quest ≥ 10 × lean reference', figure: ofReference('hot', SINGLE, '/s'), compare: '>=', target: 10 },
  { name: 'hot quest p99 ≤ 50 ms', figure: measured('hot', 'p99', 'ms'), compare: '<=', target: 50 },
  {
    name: 'lone credit p50 ≤ 1.0 × obvious-queue peer',
    figure: ofPeer('latency', 'p50', 'ms'),
    compare: '<=',
    target: 1,
  },
  {
    name: 'CPU per lone credit ≤ 1.0 × obvious-queue peer',
    figure: ofPeer('latency', 'CPU per allocation', 'ms'),
    compare: '<=',
    target: 1,
  },
  { name: 'throughput ≥ 4 × obvious-queue peer', figure: ofPeer('throughput', SINGLE, '/s'), compare: '>=', target: 4 },
  { name: 'hot quest ≥ 10 × obvious-queue peer', figure: ofPeer('hot', SINGLE, '/s'), compare: '>=', target: 10 },
  { name: '4. batch ≥ 30,000 credits/s', figure: measured('batch', 'credits/s,', '/s'), compare: '>=', target: 30_000 },
  { name: 'batches endpoint ≥ 0.9 × bulk-apply limit', figure: ofLimit('batch', 'credits/s,', '/s'), compare: '>=', target: 0.9 },
  {
    name: (cfg) => `quest-admin credit ≥ 0.9 × bulk-apply limit (${groupThousands(cfg.batchItems)} rows, spawn to exit)`,
    figure: ofLimit('batch', 'quest-admin credit, ', '/s'),
    compare: '>=',
    target: 0.9,
  },
  {
    name: 'webhooks: throughput with one endpoint ≥ 0.9 × without',
    figure: ofLimit('webhooks', 'allocations/s with one endpoint', '/s'),
    compare: '>=',
    target: 0.9,
  },
  {
    name: "webhooks: … the same by the service's CPU per allocation (receiver not counted)",
    figure: measured('webhooks', 'capacity with one endpoint', 'x'),
    compare: '>=',
    target: 0.9,
  },
  {
    name: 'webhooks: delivery lag p99 ≤ 1 s at that rate',
    figure: measured('webhooks', 'delivery lag p99', 'ms'),
    compare: '<=',
    target: 1000,
  },
  { name: '6. ≤ 200 MB RSS per process', figure: maxRss, compare: '<=', target: 200 },
  {
    name: (cfg) => `admin: import ${groupThousands(cfg.importRows)} accounts (quest-admin account import) < ${IMPORT_GOAL_S} s`,
    figure: cliBesideLimit('admin', 'account import, ', 'importAccounts'),
    compare: '<',
    target: IMPORT_GOAL_S,
  },
  {
    name: (cfg) => `admin: audit over ${groupThousands(cfg.auditPayouts)} payouts (quest-admin audit) < ${AUDIT_GOAL_S} s`,
    figure: cliBesideLimit('admin', 'audit, ', 'audit()'),
    compare: '<',
    target: AUDIT_GOAL_S,
  },
];

const meets = (value: number, compare: Goal['compare'], target: number) =>
  compare === '<=' ? value <= target : compare === '<' ? value < target : value >= target;

export function goalTable(outputs: readonly ScenarioOutput[], cfg: BenchConfig, goals: readonly Goal[] = GOALS): string {
  const results = new Results(outputs);
  const rows = goals.map((g) => {
    const f = g.figure(results);
    const verdict = f === undefined ? 'not measured' : meets(f.value, g.compare, g.target) ? 'met' : 'MISSED';
    return [typeof g.name === 'string' ? g.name : g.name(cfg), f?.text ?? '—', verdict];
  });
  return markdownTable(['goal', 'measured', 'verdict'], rows);
}
