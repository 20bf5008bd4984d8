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
            : html`<a href="/console/operator">Owners &amp; keys</a><a href="/console/operator/quests">Quests</a><a href="/console/operator/pool">Pool</a><a href="/admin/queues">Queue console</a>`
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

/** Line chart of `points` (x ascending), inline SVG, with a text summary for screen readers. */
export function lineChart(points: { x: number; y: number }[], opts: { label: string; width?: number; height?: number }): Html {
  const width = opts.width ?? 600;
  const height = opts.height ?? 160;
  if (points.length === 0) return html`<p class="muted">No data in this period.</p>`;
  const xs = points.map((p) => p.x);
  const ys = points.map((p) => p.y);
  const [x0, x1] = [Math.min(...xs), Math.max(...xs)];
  const y1 = Math.max(1, ...ys);
  const sx = (x: number) => (x1 === x0 ? width / 2 : ((x - x0) / (x1 - x0)) * (width - 20) + 10);
  const sy = (y: number) => height - 10 - (y / y1) * (height - 20);
  const path = points.map((p, i) => `${i === 0 ? 'M' : 'L'}${sx(p.x).toFixed(1)},${sy(p.y).toFixed(1)}`).join(' ');
  return html`<svg class="chart" viewBox="0 0 ${width} ${height}" role="img" aria-label="${opts.label}" preserveAspectRatio="none">
    <line x1="0" y1="${height - 10}" x2="${width}" y2="${height - 10}" class="axis"></line>
    <path d="${path}" class="line"></path>
  </svg>`;
}

/** Bar chart of `values` (one bar each), inline SVG. */
export function barChart(values: { label: string; value: number }[], opts: { label: string; height?: number }): Html {
  const height = opts.height ?? 120;
  if (values.length === 0) return html`<p class="muted">No data in this period.</p>`;
  const width = Math.max(60, values.length * 10);
  const max = Math.max(1, ...values.map((v) => v.value));
  const bars = values.map((v, i) => {
    const h = (v.value / max) * (height - 10);
    return html`<rect x="${i * 10 + 1}" y="${(height - h).toFixed(1)}" width="8" height="${h.toFixed(1)}"><title>${v.label}: ${fmt(v.value)}</title></rect>`;
  });
  return html`<svg class="chart bars" viewBox="0 0 ${width} ${height}" role="img" aria-label="${opts.label}" preserveAspectRatio="none">${bars}</svg>`;
}
