/**
 * The console's only stylesheet and script, served by the API at /console/assets/ (no CDN): the
 * stylesheet a string here, the script a TypeScript program of its own (browser/) bundled by esbuild.
 * The pages work without the script except for the CSV upload and live progress, which it adds.
 */

import type { FastifyInstance } from 'fastify';
import { PUBLIC } from './context.ts';

export const CONSOLE_CSS = `
:root { --fg: #1b1f24; --muted: #57606a; --bg: #fff; --accent: #0b5cad; --border: #d0d7de; --bad: #a40e26; --ok: #116329; --panel: #f6f8fa; }
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg); }
header nav { display: flex; flex-wrap: wrap; gap: .25rem 1rem; align-items: center; padding: .6rem 1rem; background: #0d1117; }
header nav a, header nav .who, header nav button.link { color: #f0f6fc; }
header nav .brand { font-weight: 700; margin-right: 1rem; }
header nav .who { margin-left: auto; opacity: .85; }
main { max-width: 70rem; margin: 0 auto; padding: 1rem; }
h1 { font-size: 1.6rem; margin: .5rem 0 1rem; }
h2 { font-size: 1.2rem; margin: 1.5rem 0 .5rem; }
a { color: var(--accent); }
a:focus-visible, button:focus-visible, input:focus-visible, select:focus-visible { outline: 3px solid #f2a900; outline-offset: 2px; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .4rem .5rem; border-bottom: 1px solid var(--border); vertical-align: top; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.table-wrap { overflow-x: auto; }
code, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: .9em; overflow-wrap: anywhere; }
td code, td .mono { overflow-wrap: normal; }
.muted { color: var(--muted); }
.flash { background: #dafbe1; border: 1px solid #4ac26b; padding: .5rem .75rem; border-radius: 6px; }
.error, [role=alert] { color: var(--bad); }
.panel { background: var(--panel); border: 1px solid var(--border); border-radius: 8px; padding: 1rem; margin: 1rem 0; }
.grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(18rem, 1fr)); gap: 1rem; }
form.stack { display: grid; grid-template-columns: minmax(0, 1fr); gap: .6rem; max-width: 32rem; overflow-wrap: anywhere; }
form.inline { display: inline; }
label { font-weight: 600; }
input, select, button { font: inherit; }
input[type=text], input[type=password], input[type=number], input[type=url], input[type=datetime-local], input[type=search], select {
  width: 100%; padding: .45rem .55rem; border: 1px solid #8c959f; border-radius: 6px; }
button, .button { display: inline-block; padding: .45rem .9rem; border-radius: 6px; border: 1px solid #1f6feb; background: #0b5cad; color: #fff; cursor: pointer; text-decoration: none; }
button.secondary, .button.secondary { background: #fff; color: var(--accent); }
button.danger { background: var(--bad); border-color: var(--bad); }
button.link { background: none; border: none; padding: 0; text-decoration: underline; color: inherit; }
.bar { display: flex; flex-wrap: wrap; align-items: center; gap: .5rem; }
meter, progress { width: 14rem; max-width: 100%; height: 1.1rem; }
.bar meter { width: auto; flex: 1 1 8rem; min-width: 6rem; max-width: 14rem; }
.chart { width: 100%; height: auto; background: #fff; border: 1px solid var(--border); border-radius: 6px; }
.chart text { font-size: 12px; fill: var(--muted); }
.periods { display: flex; gap: .75rem; margin-bottom: .5rem; }
.periods a[aria-current] { font-weight: 700; text-decoration: none; color: var(--fg); }
.chart .line { fill: none; stroke: var(--accent); stroke-width: 2; vector-effect: non-scaling-stroke; }
.chart .axis { stroke: var(--border); }
.chart.bars rect { fill: var(--accent); }
.key-once { font-size: 1.1rem; padding: .75rem; background: #fff8c5; border: 1px solid #d4a72c; border-radius: 6px; }
.status-completed { color: var(--ok); }
.status-failed { color: var(--bad); }
@media (max-width: 40rem) {
  th.opt, td.opt { display: none; }
  main { padding: .75rem; }
  h1 { font-size: 1.3rem; }
  /* A table of cards: each row a block, each cell a line named by its column. */
  table.cards thead { position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); }
  table.cards, table.cards tbody, table.cards tr, table.cards td { display: block; }
  table.cards tr { border-bottom: 1px solid var(--border); padding: .5rem 0; }
  table.cards td { border: 0; padding: .15rem 0; text-align: left; }
  table.cards td[data-label]::before { content: attr(data-label) ": "; color: var(--muted); }
  table.cards td code { overflow-wrap: anywhere; }
  table.cards progress { width: 100%; }
}
`;

export const FAVICON_SVG =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16" rx="3" fill="#0b5cad"/><path d="M4 11l4-7 4 7z" fill="#fff"/></svg>';

/** Set by scripts/build.mjs (esbuild's `define`) in the API's bundle: the bundled browser script. */
declare const __CONSOLE_SCRIPT__: string | undefined;

let script: Promise<string> | undefined;

/** The browser script (browser/console.ts) as bundled: the bundle's copy, else bundled now, once. */
export function consoleScript(): Promise<string> {
  if (typeof __CONSOLE_SCRIPT__ === 'string') return Promise.resolve(__CONSOLE_SCRIPT__);
  script ??= import('./script.ts').then((m) => m.bundleConsoleScript());
  return script;
}

/** The stylesheet, the script and the icon, public and cacheable for a few minutes. */
export function assetRoutes(app: FastifyInstance): void {
  app.get('/assets/console.css', PUBLIC, async (_request, reply) =>
    reply.type('text/css; charset=utf-8').header('cache-control', 'public, max-age=300').send(CONSOLE_CSS),
  );
  app.get('/assets/console.js', PUBLIC, async (_request, reply) =>
    reply
      .type('text/javascript; charset=utf-8')
      .header('cache-control', 'public, max-age=300')
      .send(await consoleScript()),
  );
  app.get('/assets/favicon.svg', PUBLIC, async (_request, reply) =>
    reply.type('image/svg+xml').header('cache-control', 'public, max-age=86400').send(FAVICON_SVG),
  );
}
