/** Pure helpers: percentiles, number formatting, the results table. No I/O. */

export interface LatencySummary {
  count: number;
  mean: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

/**
 * Nearest-rank percentile of an ascending array (p in 0..100): the smallest value such that at
 * least p % of the samples are ≤ it. NaN for an empty array.
 */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  if (p <= 0) return sorted[0]!;
  if (p >= 100) return sorted[sorted.length - 1]!;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!;
}

export function summarize(samples: readonly number[]): LatencySummary {
  const sorted = Float64Array.from(samples).sort();
  const arr = Array.from(sorted);
  let sum = 0;
  for (const v of arr) sum += v;
  return {
    count: arr.length,
    mean: arr.length ? sum / arr.length : Number.NaN,
    p50: percentile(arr, 50),
    p90: percentile(arr, 90),
    p99: percentile(arr, 99),
    max: arr.length ? arr[arr.length - 1]! : Number.NaN,
  };
}

export type Unit = 'ms' | '/s' | 'MB' | 'x' | 'count' | 'per' | 's' | 'text';

/** Format a measured value for the table. */
export function formatValue(value: number | string | null | undefined, unit: Unit): string {
  if (value === null || value === undefined) return '—';
  if (typeof value === 'string') return value;
  if (!Number.isFinite(value)) return '—';
  switch (unit) {
    case 'ms':
      // Decide on the rounded value, so 9.996 prints as 10.0, not 10.00.
      return `${Number(value.toFixed(2)) < 10 ? value.toFixed(2) : Number(value.toFixed(1)) < 100 ? value.toFixed(1) : Math.round(value).toString()} ms`;
    case '/s':
      return `${groupThousands(Math.round(value))}/s`;
    case 'MB':
      return `${value.toFixed(0)} MB`;
    case 'x':
      return `${value.toFixed(2)}×`;
    case 's':
      return `${value.toFixed(1)} s`;
    case 'count':
      return groupThousands(Math.round(value));
    case 'per':
      return value.toFixed(1);
    case 'text':
      return String(value);
    default: {
      const never: never = unit;
      return String(never);
    }
  }
}

export function groupThousands(n: number): string {
  const s = Math.abs(n).toString();
  const grouped = s.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return n < 0 ? `-${grouped}` : grouped;
}

/** service ÷ limit, or null when either side is missing or the limit is zero. */
export function ratio(service: number | null | undefined, limit: number | null | undefined): number | null {
  if (service === null || service === undefined || limit === null || limit === undefined) return null;
  if (!Number.isFinite(service) || !Number.isFinite(limit) || limit === 0) return null;
  return service / limit;
}

export interface Row {
  scenario: string;
  metric: string;
  unit: Unit;
  service: number | string | null;
  limit?: number | null;
  /** Overrides the computed service ÷ limit. */
  ratio?: number | null;
  /** The same figure for the reference service (a plain synchronous Fastify + postgres.js service). */
  reference?: number | null;
  /** The same figure for the obvious-queue peer (one BullMQ job per request, `waitUntilFinished`, one worker). */
  peer?: number | string | null;
  status: string;
}

export const TABLE_HEADER = [
  'scenario',
  'metric',
  'service',
  'limit',
  'ratio',
  'reference',
  'vs ref',
  'peer',
  'vs peer',
  'status',
] as const;

/** The service's figure ÷ a side's, as the table shows it ('—' when either is missing). */
function versus(row: Row, other: number | string | null | undefined): string {
  const v = typeof row.service === 'number' && typeof other === 'number' ? ratio(row.service, other) : null;
  return v === null ? '—' : v.toFixed(2);
}

export function rowCells(row: Row): string[] {
  const r = row.ratio !== undefined ? row.ratio : typeof row.service === 'number' ? ratio(row.service, row.limit) : null;
  return [
    row.scenario,
    row.metric,
    formatValue(row.service, row.unit),
    row.limit === undefined ? '—' : formatValue(row.limit, row.unit),
    r === null ? '—' : `${r.toFixed(2)}`,
    row.reference === undefined ? '—' : formatValue(row.reference, row.unit),
    versus(row, row.reference),
    row.peer === undefined ? '—' : formatValue(row.peer, row.unit),
    versus(row, row.peer),
    row.status,
  ];
}

function escapeCell(s: string): string {
  return s.replaceAll('|', '\\|').replaceAll('\n', ' ');
}

/** A GitHub-flavoured Markdown table with padded columns (readable as plain text too). */
export function markdownTable(
  header: readonly string[],
  rows: readonly (readonly string[])[],
  align?: readonly ('l' | 'r')[],
): string {
  const all = [header, ...rows].map((r) => r.map(escapeCell));
  const widths = header.map((_, c) => Math.max(3, ...all.map((r) => (r[c] ?? '').length)));
  const pad = (s: string, c: number) => (align?.[c] === 'r' ? s.padStart(widths[c]!) : s.padEnd(widths[c]!));
  const line = (r: readonly string[]) => `| ${r.map((s, c) => pad(s ?? '', c)).join(' | ')} |`;
  const rule = `| ${widths.map((w, c) => (align?.[c] === 'r' ? `${'-'.repeat(w - 1)}:` : '-'.repeat(w))).join(' | ')} |`;
  return [line(all[0]!), rule, ...all.slice(1).map(line)].join('\n');
}

export function resultsTable(rows: readonly Row[]): string {
  return markdownTable(TABLE_HEADER, rows.map(rowCells), ['l', 'l', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'l']);
}

/** Deterministic, fast PRNG (mulberry32) so runs pick the same quest/account sequences. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Split n into chunks of at most size. */
export function chunkSizes(n: number, size: number): number[] {
  const out: number[] = [];
  for (let start = 0; start < n; start += size) out.push(Math.min(size, n - start));
  return out;
}
