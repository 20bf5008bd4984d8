/**
 * HTML for the console's server-rendered pages: a tagged template that escapes every value it is
 * given (only `Html` values, made by this tag or `raw`, pass through as markup), the page layout,
 * and the small pieces every view shares (figures, times, a budget bar). Charts: charts.ts.
 */

import { consolePath } from './paths.ts';

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

const OWNER_LINKS = [
  ['My quests', consolePath('quests')],
  ['Webhooks', consolePath('webhooks')],
] as const;
const OPERATOR_LINKS = [
  ['Owners & keys', consolePath('operator')],
  ['Campaigns', consolePath('operator', 'campaigns')],
  ['Quests', consolePath('operator', 'quests')],
  ['Accounts', consolePath('operator', 'accounts')],
  ['Pool', consolePath('operator', 'pool')],
  ['Flags', consolePath('operator', 'flags')],
  ['Audit', consolePath('operator', 'audit')],
  ['Queue console', '/admin/queues'],
] as const;

export function layout(opts: { title: string; viewer?: Viewer | undefined; body: Html; flash?: string | undefined }): string {
  const { title, viewer, body, flash } = opts;
  const home = html`<a href="${consolePath('')}" class="brand">Quest Rewards</a>`;
  const links = (viewer?.kind === 'owner' ? OWNER_LINKS : OPERATOR_LINKS).map(
    ([label, path]) => html`<a href="${path}">${label}</a>`,
  );
  const nav = viewer
    ? html`<nav aria-label="Console">
        ${home}${links}
        <span class="who">${viewer.kind === 'operator' ? 'Operator' : viewer.name}</span>
        <form method="post" action="${consolePath('sign-out')}" class="inline">
          <input type="hidden" name="_csrf" value="${viewer.csrfToken}">
          <button type="submit" class="link">Sign out</button>
        </form>
      </nav>`
    : html`<nav aria-label="Console">${home}</nav>`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
${viewer ? `<meta name="csrf-token" content="${escapeHtml(viewer.csrfToken)}">` : ''}
<title>${escapeHtml(title)} · Quest Rewards console</title>
<link rel="icon" href="${consolePath('assets', 'favicon.svg')}" type="image/svg+xml">
<link rel="stylesheet" href="${consolePath('assets', 'console.css')}">
<script src="${consolePath('assets', 'console.js')}" defer></script>
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

/**
 * `part` of `whole` in percent to one decimal, rounded to the nearest but never to 100 or 0 unless
 * it is: 9,999 of 10,000 is 99.9 %, 1 of 100,000 is 0.1 %.
 */
export function percent(part: number, whole: number): number {
  if (whole <= 0) return 0;
  const pct = Math.round((part / whole) * 1000) / 10;
  if (pct === 100 && part < whole) return 99.9;
  if (pct === 0 && part > 0) return 0.1;
  return pct;
}

/** A count and its noun, singular for one: `counted(1, 'key')` is "1 key", `counted(2, 'key')` "2 keys". */
export const counted = (n: number, noun: string, plural = `${noun}s`) => `${fmt(n)} ${n === 1 ? noun : plural}`;

/** A labelled bar: `value` of `max`, as a native <meter> (read out by screen readers) with the figures beside it. */
export function budgetBar(remaining: number, total: number, label: string): Html {
  const pct = percent(remaining, total);
  return html`<div class="bar"><meter min="0" max="${total}" value="${remaining}" aria-label="${label}" title="${pct}% left"></meter>
    <span class="figures"><strong data-remaining>${fmt(remaining)}</strong> of ${fmt(total)} left (${pct}%)</span></div>`;
}
