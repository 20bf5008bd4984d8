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

/** Screenshot the page into test-results/console/<name>.png. */
export const screenshot = (page: Page, name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });

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
