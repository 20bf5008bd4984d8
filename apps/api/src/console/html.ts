/**
 * HTML for the console's server-rendered pages: a tagged template that escapes every value it is
 * given (only `Html` values, made by this tag or `raw`, pass through as markup), the page layout,
 * and the small pieces every view shares (a budget bar, a progress bar, an SVG chart).
 */

export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
export const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => ESCAPES[c]!);

type Value = Html | string | number | boolean | null | undefined | readonly Value[];

function render(value: Value): string {
  if (value === null || value === undefined || value === false) return '';
  if (value instanceof Html) return value.text;
  if (Array.isArray(value)) return value.map(render).join('');
  return escapeHtml(String(value));
}

export function html(strings: TemplateStringsArray, ...values: Value[]): Html {
  let out = strings[0]!;
  for (let i = 0; i < values.length; i++) out += render(values[i]!) + strings[i + 1]!;
  return new Html(out);
}

/** Markup made elsewhere and trusted (never user input). */
export const raw = (text: string) => new Html(text);

export const fmt = (n: number) => n.toLocaleString('en-US');
export const when = (d: Date | null) =>
  d
    ? d
        .toISOString()
        .replace('T', ' ')
        .replace(/\.\d+Z$/, ' UTC')
    : '—';

export interface Viewer {
  kind: 'owner' | 'operator';
  name: string;
  csrfToken: string;
}

export function layout(opts: { title: string; viewer?: Viewer | undefined; body: Html; flash?: string | undefined }): string {
  const { title, viewer, body, flash } = opts;
  const nav = viewer
    ? html`<nav aria-label="Console">
        <a href="/console/" class="brand">Quest Rewards</a>
        ${
          viewer.kind === 'owner'
            ? html`<a href="/console/quests">My quests</a><a href="/console/webhooks">Webhooks</a>`
            : html`<a href="/console/operator">Owners &amp; keys</a><a href="/console/operator/campaigns">Campaigns</a><a href="/console/operator/quests">Quests</a><a href="/console/operator/accounts">Accounts</a><a href="/console/operator/pool">Pool</a><a href="/console/operator/flags">Flags</a><a href="/console/operator/audit">Audit</a><a href="/admin/queues">Queue console</a>`
        }
        <span class="who">${viewer.kind === 'operator' ? 'Operator' : viewer.name}</span>
        <form method="post" action="/console/sign-out" class="inline">
          <input type="hidden" name="_csrf" value="${viewer.csrfToken}">
          <button type="submit" class="link">Sign out</button>
        </form>
      </nav>`
    : html`<nav aria-label="Console"><a href="/console/" class="brand">Quest Rewards</a></nav>`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
${viewer ? `<meta name="csrf-token" content="${escapeHtml(viewer.csrfToken)}">` : ''}
<title>${escapeHtml(title)} · Quest Rewards console</title>
<link rel="icon" href="/console/assets/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/console/assets/console.css">
<script src="/console/assets/console.js" defer></script>
</head>
<body>
<header>${nav.text}</header>
<main id="main">
<h1>${escapeHtml(title)}</h1>
${flash ? `<p class="flash" role="status">${escapeHtml(flash)}</p>` : ''}
${body.text}
</main>
</body>
</html>`;
}

export const csrfField = (viewer: Viewer) => html`<input type="hidden" name="_csrf" value="${viewer.csrfToken}">`;

/** A labelled bar: `value` of `max`, as a native <meter> (read out by screen readers) with the figures beside it. */
export function budgetBar(remaining: number, total: number, label: string): Html {
  const pct = total > 0 ? Math.round((remaining / total) * 1000) / 10 : 0;
  return html`<div class="bar"><meter min="0" max="${total}" value="${remaining}" aria-label="${label}" title="${pct}% left"></meter>
    <span class="figures"><strong data-remaining>${fmt(remaining)}</strong> of ${fmt(total)} left (${pct}%)</span></div>`;
}

const compact = (n: number) =>
  Math.abs(n) >= 1e6 ? `${Math.round(n / 1e5) / 10}M` : Math.abs(n) >= 1e4 ? `${Math.round(n / 100) / 10}k` : fmt(Math.round(n));

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
  let [y0, y1] = [Math.min(...ys), Math.max(...ys)];
  if (y0 === y1) [y0, y1] = [Math.max(0, y0 - 1), y1 + 1];
  const sx = (x: number) => (x1 === x0 ? (left + width) / 2 : left + ((x - x0) / (x1 - x0)) * (width - left - 8));
  const sy = (y: number) => bottom - ((y - y0) / (y1 - y0)) * (bottom - 10);
  const path = points.map((p, i) => `${i === 0 ? 'M' : 'L'}${sx(p.x).toFixed(1)},${sy(p.y).toFixed(1)}`).join(' ');
  return html`<svg class="chart" viewBox="0 0 ${width} ${height}" role="img" aria-label="${opts.label}">
    <line x1="${left}" y1="${bottom}" x2="${width}" y2="${bottom}" class="axis"></line>
    <line x1="${left}" y1="10" x2="${left}" y2="${bottom}" class="axis"></line>
    <text x="${left - 4}" y="16" text-anchor="end">${compact(y1)}</text>
    <text x="${left - 4}" y="${bottom}" text-anchor="end">${compact(y0)}</text>
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
