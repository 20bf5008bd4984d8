import { describe, expect, it } from 'vitest';
import { areaOf, selfTimes } from './profile.ts';
import {
  chunkSizes,
  formatValue,
  groupThousands,
  markdownTable,
  percentile,
  ratio,
  resultsTable,
  rng,
  summarize,
} from './stats.ts';

describe('percentile (nearest rank)', () => {
  const xs = Array.from({ length: 100 }, (_, i) => i + 1);
  it('picks the nearest-rank value', () => {
    expect(percentile(xs, 50)).toBe(50);
    expect(percentile(xs, 90)).toBe(90);
    expect(percentile(xs, 99)).toBe(99);
    expect(percentile(xs, 100)).toBe(100);
    expect(percentile(xs, 0)).toBe(1);
  });
  it('handles tiny and empty inputs', () => {
    expect(percentile([7], 99)).toBe(7);
    expect(percentile([1, 2], 50)).toBe(1);
    expect(Number.isNaN(percentile([], 50))).toBe(true);
  });
  it('summarize sorts numerically, not lexically', () => {
    const s = summarize([10, 9, 100, 2, 1]);
    expect(s.p50).toBe(9);
    expect(s.max).toBe(100);
    expect(s.count).toBe(5);
    expect(s.mean).toBeCloseTo(24.4);
  });
});

describe('formatting', () => {
  it('groups thousands and formats units', () => {
    expect(groupThousands(1234567)).toBe('1,234,567');
    expect(groupThousands(-1000)).toBe('-1,000');
    expect(formatValue(1.234, 'ms')).toBe('1.23 ms');
    expect(formatValue(12.34, 'ms')).toBe('12.3 ms');
    expect(formatValue(9.996, 'ms')).toBe('10.0 ms');
    expect(formatValue(99.96, 'ms')).toBe('100 ms');
    expect(formatValue(31234.6, '/s')).toBe('31,235/s');
    expect(formatValue(null, '/s')).toBe('—');
    expect(formatValue(Number.NaN, 'ms')).toBe('—');
  });
  it('ratio is service ÷ limit and null when undefined', () => {
    expect(ratio(50, 100)).toBe(0.5);
    expect(ratio(50, 0)).toBeNull();
    expect(ratio(50, null)).toBeNull();
  });
  it('renders an aligned Markdown table and escapes pipes', () => {
    const t = markdownTable(['a', 'b'], [['x|y', '1']], ['l', 'r']);
    expect(t.split('\n')).toEqual(['| a    |   b |', '| ---- | --: |', '| x\\|y |   1 |']);
  });
  it('results table computes the ratio column', () => {
    const t = resultsTable([{ scenario: 's', metric: 'm', unit: '/s', service: 500, limit: 1000, status: 'PASS' }]);
    expect(t).toContain('0.50');
    expect(t).toContain('1,000/s');
  });
  it('results table sets the service beside the reference and the obvious-queue peer', () => {
    const row = { scenario: 's', metric: 'm', unit: '/s' as const, service: 2000, reference: 1000, peer: 500, status: 'PASS' };
    const [, , body] = resultsTable([row]).split('\n');
    const cells = body!.split('|').map((c) => c.trim());
    expect(cells.slice(6, 10)).toEqual(['1,000/s', '2.00', '500/s', '4.00']);
    // A text figure of the peer is shown, with no ratio.
    const [, , text] = resultsTable([{ ...row, unit: 'text', service: '62.2 (5.1)', peer: '61.0 (6.0)' }]).split('\n');
    expect(
      text!
        .split('|')
        .map((c) => c.trim())
        .slice(8, 10),
    ).toEqual(['61.0 (6.0)', '—']);
  });
});

describe('helpers', () => {
  it('rng is deterministic and in [0, 1)', () => {
    const a = rng(42);
    const b = rng(42);
    const xs = Array.from({ length: 1000 }, () => a());
    expect(xs).toEqual(Array.from({ length: 1000 }, () => b()));
    expect(xs.every((x) => x >= 0 && x < 1)).toBe(true);
  });
  it('chunkSizes splits with a short tail', () => {
    expect(chunkSizes(10_000, 2000)).toEqual([2000, 2000, 2000, 2000, 2000]);
    expect(chunkSizes(5, 2)).toEqual([2, 2, 1]);
  });
});

describe('cpuprofile summary', () => {
  it('classifies script URLs', () => {
    expect(areaOf('file:///w/node_modules/fastify/lib/route.js', 'x')).toBe('fastify');
    expect(areaOf('file:///w/node_modules/@fastify/ajv/x.js', 'x')).toBe('@fastify/ajv');
    expect(areaOf('file:///w/packages/db/src/ledger.ts', 'x')).toBe('packages/db');
    expect(areaOf('node:internal/streams', 'x')).toBe('node internals');
    expect(areaOf('', '(garbage collector)')).toBe('GC');
    expect(areaOf('file:///w/bench-results/build-x/bin/api.mjs', 'f')).toBe('our code (bundled apps + @quest/*)');
    expect(areaOf('file:///w/apps/admin/dist/chunks/lists-AB12.mjs', 'f')).toBe('our code (bundled apps + @quest/*)');
    expect(areaOf('file:///w/apps/admin/dist/bench-x/chunks/chunk-AB12.mjs', 'f')).toBe('our code (bundled apps + @quest/*)');
  });
  it('sums self time per function from samples and time deltas', () => {
    const frame = (functionName: string, url = '') => ({ functionName, url, lineNumber: 0, columnNumber: 0 });
    const profile = {
      nodes: [
        { id: 1, callFrame: frame('(root)'), children: [2, 3] },
        { id: 2, callFrame: frame('parse', 'file:///w/node_modules/zod/index.js') },
        { id: 3, callFrame: frame('(idle)') },
      ],
      startTime: 0,
      endTime: 3000,
      samples: [2, 2, 3],
      timeDeltas: [1000, 1000, 1000],
    };
    const s = selfTimes(profile);
    expect(s.total).toBe(3);
    expect(s.byArea[0]).toMatchObject({ name: 'zod', ms: 2 });
  });
});
