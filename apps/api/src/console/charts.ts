import { fmt, type Html, html } from './html.ts';

/** SVG charts for the console's pages, each with a text alternative (its label). */

const compact = (n: number) =>
  Math.abs(n) >= 1e6 ? `${Math.round(n / 1e5) / 10}M` : Math.abs(n) >= 1e4 ? `${Math.round(n / 100) / 10}k` : fmt(Math.round(n));

/** The labels of a range's ends: compact figures, or whole ones when compact would write both alike. */
function rangeLabels(low: number, high: number): [string, string] {
  const [a, b] = [compact(low), compact(high)];
  return a === b ? [fmt(low), fmt(high)] : [a, b];
}

/**
 * Line chart of `points` (x ascending: milliseconds), inline SVG scaled to its own range, with its
 * lowest and highest values and the ends of the period written on it, and a text alternative.
 */
export function lineChart(
  points: { x: number; y: number }[],
  opts: { label: string; from: string; to: string; width?: number; height?: number },
): Html {
  const width = opts.width ?? 600;
  const height = opts.height ?? 170;
  if (points.length === 0) return html`<p class="muted">No data in this period.</p>`;
  const left = 52;
  const bottom = height - 22;
  const xs = points.map((p) => p.x);
  const ys = points.map((p) => p.y);
  const [x0, x1] = [Math.min(...xs), Math.max(...xs)];
  const [y0, y1] = [Math.min(...ys), Math.max(...ys)];
  const sx = (x: number) => (x1 === x0 ? (left + width) / 2 : left + ((x - x0) / (x1 - x0)) * (width - left - 8));
  // A flat line runs across the middle, its one value written once beside it.
  const sy = (y: number) => (y1 === y0 ? (bottom + 10) / 2 : bottom - ((y - y0) / (y1 - y0)) * (bottom - 10));
  const path = points.map((p, i) => `${i === 0 ? 'M' : 'L'}${sx(p.x).toFixed(1)},${sy(p.y).toFixed(1)}`).join(' ');
  const [low, high] = rangeLabels(y0, y1);
  const yLabels =
    y0 === y1
      ? html`<text x="${left - 4}" y="${(sy(y0) + 4).toFixed(1)}" text-anchor="end">${compact(y0)}</text>`
      : html`<text x="${left - 4}" y="16" text-anchor="end">${high}</text>
    <text x="${left - 4}" y="${bottom}" text-anchor="end">${low}</text>`;
  return html`<svg class="chart" viewBox="0 0 ${width} ${height}" role="img" aria-label="${opts.label}">
    <line x1="${left}" y1="${bottom}" x2="${width}" y2="${bottom}" class="axis"></line>
    <line x1="${left}" y1="10" x2="${left}" y2="${bottom}" class="axis"></line>
    ${yLabels}
    <text x="${left}" y="${height - 6}">${opts.from}</text>
    <text x="${width - 4}" y="${height - 6}" text-anchor="end">${opts.to}</text>
    <path d="${path}" class="line"></path>
  </svg>`;
}

/** Bar chart of `values` (one bar each, in order), inline SVG, with its highest value written on it. */
export function barChart(values: { label: string; value: number }[], opts: { label: string; from: string; to: string }): Html {
  const width = 600;
  const height = 130;
  if (values.length === 0) return html`<p class="muted">No data in this period.</p>`;
  const left = 52;
  const bottom = height - 22;
  const max = Math.max(1, ...values.map((v) => v.value));
  const step = (width - left - 8) / Math.max(values.length, 30);
  const bars = values.map((v, i) => {
    const h = (v.value / max) * (bottom - 10);
    return html`<rect x="${(left + i * step + 1).toFixed(1)}" y="${(bottom - h).toFixed(1)}" width="${Math.max(1, step - 2).toFixed(1)}" height="${h.toFixed(1)}"><title>${v.label}: ${fmt(v.value)}</title></rect>`;
  });
  return html`<svg class="chart bars" viewBox="0 0 ${width} ${height}" role="img" aria-label="${opts.label}">
    <line x1="${left}" y1="${bottom}" x2="${width}" y2="${bottom}" class="axis"></line>
    <text x="${left - 4}" y="16" text-anchor="end">${compact(max)}</text>
    <text x="${left - 4}" y="${bottom}" text-anchor="end">0</text>
    <text x="${left}" y="${height - 6}">${opts.from}</text>
    <text x="${width - 4}" y="${height - 6}" text-anchor="end">${opts.to}</text>
    ${bars}</svg>`;
}
