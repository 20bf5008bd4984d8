import { describe, expect, it } from 'vitest';
import { benchConfig } from './config.ts';
import type { ScenarioOutput } from './context.ts';
import { GOALS, goalTable } from './goals.ts';
import type { Row } from './stats.ts';

const cfg = benchConfig(true, { chunkSize: 5000 });

function output(name: ScenarioOutput['name'], rows: Omit<Row, 'scenario' | 'status'>[]): ScenarioOutput {
  return { name, ok: true, rows: rows.map((r) => ({ ...r, scenario: name, status: 'PASS' })), raw: {}, notes: [] };
}

/** The goals table as { goal → [measured, verdict] }. */
function goals(outputs: ScenarioOutput[]): Map<string, [string, string]> {
  const lines = goalTable(outputs, cfg).split('\n').slice(2);
  return new Map(
    lines.map((l) => {
      const [goal, measured, verdict] = l
        .slice(1, -1)
        .split(' | ')
        .map((c) => c.trim());
      return [goal!, [measured!, verdict!]];
    }),
  );
}

describe('goals table', () => {
  it('lists every goal, each "not measured" when its scenario did not run', () => {
    const table = goals([]);
    expect(table.size).toBe(GOALS.length);
    expect([...table.values()].every(([m, v]) => m === '—' && v === 'not measured')).toBe(true);
    expect(table.has('quest-admin credit ≥ 0.9 × bulk-apply limit (20,000 rows, spawn to exit)')).toBe(true);
    expect(table.has('admin: import 100,000 accounts (quest-admin account import) < 10 s')).toBe(true);
  });

  it('compares the service, its ratio to the limit and to the reference against each target', () => {
    const table = goals([
      output('latency', [
        { metric: 'p50', unit: 'ms', service: 2.5, limit: 1, reference: 2 },
        { metric: 'p99', unit: 'ms', service: 20, limit: 5, reference: 10 },
        { metric: 'CPU per allocation (all processes)', unit: 'ms', service: null, limit: 1 },
        { metric: 'queue floor p50 / p99 (no-op request: add → worker → reply)', unit: 'text', service: '0.40 ms / 3.00 ms' },
        { metric: 'p50 ÷ (reference p50 + queue floor p50)', unit: 'x', service: 2.5 / 2.4 },
      ]),
      output('throughput', [
        { metric: 'allocations/s (limit: single-item tx)', unit: '/s', service: 3000, limit: 4000, reference: 1000 },
        { metric: 'allocations/s (limit: coalesced lists)', unit: '/s', service: 3000, limit: 6000 },
      ]),
    ]);
    expect(table.get('1. latency p50 ≤ 3 ms')).toEqual(['2.50 ms', 'met']);
    expect(table.get('1. latency p99 ≤ 15 ms')).toEqual(['20.0 ms', 'MISSED']);
    expect(table.get('lone request: p50 ≤ lean reference p50 + queue floor p50')).toEqual([
      '2.50 ms vs 2.00 ms + 0.40 ms = 1.04×',
      'MISSED',
    ]);
    expect(table.get('latency p99 ≤ 1.5 × reference p99')).toEqual(['20.0 ms vs 10.0 ms = 2.00×', 'MISSED']);
    expect(table.get('CPU per lone allocation ≤ 2 × lean reference')).toEqual(['—', 'not measured']);
    expect(table.get('2. throughput ≥ 0.5 × single-item limit')).toEqual(['3,000/s = 0.75 × 4,000/s', 'met']);
    expect(table.get('throughput ≥ 2 × reference')).toEqual(['3,000/s vs 1,000/s = 3.00×', 'met']);
    expect(table.get('throughput ≥ 0.6 × coalesced-lists limit')).toEqual(['0.50', 'MISSED']);
    expect(table.get('hot quest ≥ 10 × lean reference')).toEqual(['—', 'not measured']);
    expect(table.get('open loop, 1,000 quests: highest sustained rate ≥ 2 × lean reference')).toEqual(['—', 'not measured']);
    expect(table.get('reversals mixed in: allocations/s ≥ 0.8 × throughput alone')).toEqual(['—', 'not measured']);
  });

  it("sets the open loop's highest sustained rate and the credit CLI beside the reference and the bulk-apply limit", () => {
    const table = goals([
      output('open-loop', [
        { metric: 'highest sustained rate (p99 ≤ 100 ms, all 200)', unit: '/s', service: 2441, reference: 1000 },
      ]),
      output('batch', [
        { metric: 'credits/s, 4 batches in flight', unit: '/s', service: 18_000, limit: 20_000 },
        { metric: 'quest-admin credit, 20,000 rows (CLI, spawn to exit)', unit: '/s', service: 17_000, limit: 20_000 },
      ]),
    ]);
    expect(table.get('open loop, 1,000 quests: highest sustained rate ≥ 2 × lean reference')).toEqual([
      '2,441/s vs 1,000/s = 2.44×',
      'met',
    ]);
    expect(table.get('quest-admin credit ≥ 0.9 × bulk-apply limit (20,000 rows, spawn to exit)')).toEqual([
      '17,000/s = 0.85 × 20,000/s',
      'MISSED',
    ]);
    expect(table.get('batches endpoint ≥ 0.9 × bulk-apply limit')).toEqual(['18,000/s = 0.90 × 20,000/s', 'met']);
  });

  it('sets the reversals beside the allocations of the same run, and beside throughput alone', () => {
    const table = goals([
      output('throughput', [{ metric: 'allocations/s (limit: single-item tx)', unit: '/s', service: 3000, limit: 4000 }]),
      output('reversals', [
        { metric: 'allocations/s (reversals mixed in)', unit: '/s', service: 2700 },
        { metric: 'reversals/s', unit: '/s', service: 300 },
        { metric: 'allocation p99', unit: 'ms', service: 40 },
        { metric: 'reversal p99', unit: 'ms', service: 70 },
      ]),
    ]);
    expect(table.get('reversals mixed in: reversal p99 ≤ 1.5 × allocation p99 (same run)')).toEqual([
      '70.0 ms vs 40.0 ms = 1.75×',
      'MISSED',
    ]);
    expect(table.get('reversals mixed in: allocations/s ≥ 0.8 × throughput alone')).toEqual([
      '2,700/s vs 3,000/s = 0.90×',
      'met',
    ]);
  });

  it('takes the largest peak RSS of the memory rows and the credit CLI, and strict bounds for admin', () => {
    const table = goals([
      output('memory', [
        { metric: 'peak RSS api (during throughput)', unit: 'MB', service: 120 },
        { metric: 'peak RSS bench-w1 (during throughput)', unit: 'MB', service: 150 },
      ]),
      output('batch', [{ metric: 'quest-admin credit peak RSS (goal ≤ 200 MB)', unit: 'MB', service: 210 }]),
      output('admin', [
        { metric: 'account import, 100,000 rows (goal < 10 s; limit: importAccounts)', unit: 's', service: 10, limit: 2 },
        { metric: 'audit, 1,000,000 payouts (goal < 10 s; limit: audit())', unit: 's', service: 3.21, limit: 1 },
      ]),
    ]);
    expect(table.get('6. ≤ 200 MB RSS per process')).toEqual(['max 210 MB', 'MISSED']);
    expect(table.get('admin: import 100,000 accounts (quest-admin account import) < 10 s')).toEqual([
      '10.0 s (importAccounts 2.0 s)',
      'MISSED',
    ]);
    expect(table.get('admin: audit over 1,000,000 payouts (quest-admin audit) < 10 s')).toEqual(['3.2 s (audit() 1.0 s)', 'met']);
  });

  it('compares throughput with a webhook endpoint to the run without, and reads the lag p99 (not the batch one)', () => {
    const table = goals([
      output('webhooks', [
        { metric: 'allocations/s with one endpoint (limit: without)', unit: '/s', service: 2600, limit: 3000 },
        { metric: 'delivery lag p50', unit: 'ms', service: 120 },
        { metric: 'delivery lag p99', unit: 'ms', service: 800 },
        { metric: 'batch delivery lag p99', unit: 'ms', service: 5000 },
      ]),
    ]);
    expect(table.get('webhooks: throughput with one endpoint ≥ 0.9 × without')).toEqual(['2,600/s = 0.87 × 3,000/s', 'MISSED']);
    expect(table.get('webhooks: delivery lag p99 ≤ 1 s at that rate')).toEqual(['800 ms', 'met']);
  });

  it('sets a lone credit, its CPU, throughput and the hot quest beside the obvious-queue peer of the same run', () => {
    const table = goals([
      output('latency', [
        { metric: 'p50', unit: 'ms', service: 4.28, reference: 1.91, peer: 3.83 },
        { metric: 'CPU per allocation (all processes)', unit: 'ms', service: 4.6, reference: 1.9, peer: 4.6 },
      ]),
      output('throughput', [
        { metric: 'allocations/s (limit: single-item tx)', unit: '/s', service: 2000, limit: 4000, reference: 1000, peer: 466 },
      ]),
      output('hot', [{ metric: 'allocations/s (limit: single-item tx)', unit: '/s', service: 3580, limit: 700, peer: 0 }]),
    ]);
    expect(table.get('lone credit p50 ≤ 1.0 × obvious-queue peer')).toEqual(['4.28 ms vs 3.83 ms = 1.12×', 'MISSED']);
    // Equal is within the goal.
    expect(table.get('CPU per lone credit ≤ 1.0 × obvious-queue peer')).toEqual(['4.60 ms vs 4.60 ms = 1.00×', 'met']);
    expect(table.get('throughput ≥ 4 × obvious-queue peer')).toEqual(['2,000/s vs 466/s = 4.29×', 'met']);
    // A peer that answered nothing gives no ratio rather than an infinite one.
    expect(table.get('hot quest ≥ 10 × obvious-queue peer')).toEqual(['—', 'not measured']);
    // The reference's goals read their own column of the same rows.
    expect(table.get('throughput ≥ 2 × reference')).toEqual(['2,000/s vs 1,000/s = 2.00×', 'met']);
  });

  it('reports the peer goals as not measured when the peer did not run (--no-peer)', () => {
    const table = goals([
      output('latency', [{ metric: 'p50', unit: 'ms', service: 4.28, reference: 1.91 }]),
      output('hot', [{ metric: 'allocations/s (limit: single-item tx)', unit: '/s', service: 3580, limit: 700, reference: 500 }]),
    ]);
    expect(table.get('lone credit p50 ≤ 1.0 × obvious-queue peer')).toEqual(['—', 'not measured']);
    expect(table.get('hot quest ≥ 10 × obvious-queue peer')).toEqual(['—', 'not measured']);
    expect(table.get('hot quest ≥ 10 × lean reference')).toEqual(['3,580/s vs 500/s = 7.16×', 'MISSED']);
  });
});
