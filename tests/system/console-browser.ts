import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { expect } from 'vitest';
import { REPO_ROOT, type SystemOptions, systemTest } from '@quest/testing';

/**
 * What the console's browser tests share: Debian's Chromium driven by playwright-core (no browser
 * download; `.ci/run` installs it; CHROMIUM_PATH names another binary), a context per journey
 * whose pages record requests to other origins and errors (a CSP violation logs one), and `view`:
 * a screenshot into test-results/console/ and an axe check (no serious or critical violation).
 */

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const HAS_CHROMIUM = existsSync(CHROMIUM);
if (!HAS_CHROMIUM) console.warn(`console browser tests skipped: no Chromium at ${CHROMIUM} (apt-get install -y chromium)`);

export const ADMIN_TOKEN = 'console-operator-token-0123456789';
const SHOTS = join(REPO_ROOT, 'test-results', 'console');
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** systemTest with the operator token set, plus `browser` (per file). */
export const consoleTest = (options: Omit<SystemOptions, 'db' | 'redis'>) =>
  // A reversal is answered once decided within ALLOCATION_WAIT_MS (else the page says it is queued):
  // a generous wait keeps the journey about the console, not about a loaded machine's speed.
  systemTest({ ...options, env: { ALLOCATION_WAIT_MS: '30000', ...options.env, ADMIN_TOKEN } }).extend(
    'browser',
    { scope: 'file' },
    // biome-ignore lint/correctness/noEmptyPattern: vitest reads a fixture's dependencies from this pattern
    async ({}, { onCleanup }) => {
      mkdirSync(SHOTS, { recursive: true });
      const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
      onCleanup(() => browser.close());
      return browser;
    },
  );

/** A fresh browser context (no cookies) whose pages record requests elsewhere and errors. */
export async function openContext(browser: Browser, base: string) {
  const context = await browser.newContext({ acceptDownloads: true, viewport: { width: 1100, height: 900 } });
  const problems: string[] = [];
  context.on('page', (page) => watch(page, base, problems));
  const page = await context.newPage();
  return { context, page, problems };
}

function watch(page: Page, base: string, problems: string[]) {
  page.on('request', (r) => {
    if (!r.url().startsWith(base) && !r.url().startsWith('data:')) problems.push(`request elsewhere: ${r.url()}`);
  });
  page.on('console', (m) => {
    // The refused sign-in is a 401 document: Chromium logs the status, which is the point of that step.
    if (m.type() === 'error' && !/status of 401/.test(m.text())) problems.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
}

/** Screenshot the page (all of it, or what the screen shows) into test-results/console/<name>.png. */
export const screenshot = (page: Page, name: string, { fullPage = true } = {}) =>
  page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage });

/** Screenshot the page into test-results/console/ and check it with axe: no serious or critical violation. */
export async function view(page: Page, name: string) {
  const started = Date.now();
  await screenshot(page, name);
  await page.evaluate(AXE);
  const violations = (await page.evaluate(
    `axe.run(document, { resultTypes: ['violations'] }).then((r) => r.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.map((n) => n.target.join(' ')) })))`,
  )) as { id: string; impact: string; nodes: string[] }[];
  expect(
    violations.filter((v) => v.impact === 'serious' || v.impact === 'critical'),
    `${name}: serious accessibility violations`,
  ).toEqual([]);
  if (process.env.CONSOLE_TEST_TIMES) console.log(`${name}: ${Date.now() - started} ms`);
}

export async function signIn(page: Page, base: string, secret: string) {
  await page.goto(`${base}/console/`);
  await page.getByLabel('API key (or operator token)').fill(secret);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

/**
 * What a phone-width screen (375 px) shows badly, as sentences: a meter or progress bar cut off by
 * the screen or by the scrolling box it sits in, a table wider than its box (it would scroll
 * sideways), an id or address broken over more than two lines. Empty when the page fits.
 */
export async function phoneProblems(page: Page): Promise<string[]> {
  await page.setViewportSize({ width: 375, height: 812 });
  return (await page.evaluate(`(() => {
    const problems = [];
    const width = document.documentElement.clientWidth;
    const name = (el) => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + (el.getAttribute('aria-label') ? ' "' + el.getAttribute('aria-label') + '"' : '');
    for (const bar of document.querySelectorAll('meter, progress')) {
      if (bar.hidden || bar.getClientRects().length === 0) continue;
      const r = bar.getBoundingClientRect();
      const box = bar.closest('.table-wrap, .panel') || document.body;
      const b = box.getBoundingClientRect();
      if (r.right > width + 0.5 || r.right > b.right + 0.5 || r.width < 40) problems.push(name(bar) + ' cut off (' + Math.round(r.left) + '–' + Math.round(r.right) + ' px)');
    }
    for (const wrap of document.querySelectorAll('.table-wrap')) {
      if (wrap.scrollWidth > wrap.clientWidth + 1) problems.push('a table ' + wrap.scrollWidth + ' px wide in ' + wrap.clientWidth + ' px');
    }
    for (const code of document.querySelectorAll('code')) {
      if (code.getClientRects().length === 0) continue;
      const line = parseFloat(getComputedStyle(code).lineHeight) || 20;
      if (code.getBoundingClientRect().height > 2.5 * line) problems.push(name(code) + ' "' + code.textContent + '" over ' + Math.round(code.getBoundingClientRect().height / line) + ' lines');
    }
    if (document.documentElement.scrollWidth > width) {
      const wide = [...document.body.querySelectorAll('*')].filter((el) => el.getBoundingClientRect().right > width + 0.5 && ![...el.children].some((c) => c.getBoundingClientRect().right > width + 0.5));
      problems.push('the page is ' + document.documentElement.scrollWidth + ' px wide: ' + wide.slice(0, 3).map((el) => name(el) + ' to ' + Math.round(el.getBoundingClientRect().right) + ' px').join(', '));
    }
    return problems;
  })()`)) as string[];
}
