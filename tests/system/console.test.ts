import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { displayPrefix } from '@quest/domain';
import { describe, expect } from 'vitest';
import { createAccounts, randomAddress, REPO_ROOT, systemTest } from '@quest/testing';

/**
 * The console's journeys in a real browser: Debian's Chromium driven by playwright-core (no
 * browser download; `.ci/run` installs it), against the real API and a worker. An owner signs in,
 * sees a quest's remaining points, uploads a 1,000-row CSV and watches it finish, downloads its
 * failed rows, reverses a payout and sees the budget return; an operator creates an owner, a
 * quest and a key; a wrong key is refused. Every view is screenshotted into
 * test-results/console/ and checked with axe (no serious or critical violation), and no page
 * loads anything from another origin or logs an error (a CSP violation would).
 */

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const HAS_CHROMIUM = existsSync(CHROMIUM);
if (!HAS_CHROMIUM) console.warn(`console browser test skipped: no Chromium at ${CHROMIUM} (apt-get install -y chromium)`);

const ADMIN_TOKEN = 'console-operator-token-0123456789';
const SHOTS = join(REPO_ROOT, 'test-results', 'console');
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

const test = systemTest({ workers: 1, partitions: 2, env: { ADMIN_TOKEN } }).extend(
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
async function openContext(browser: Browser, base: string) {
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

/** Screenshot the page into test-results/console/ and check it with axe: no serious or critical violation. */
async function view(page: Page, name: string) {
  const started = Date.now();
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
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

async function signIn(page: Page, base: string, secret: string) {
  await page.goto(`${base}/console/`);
  await page.getByLabel('API key (or operator token)').fill(secret);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

describe.skipIf(!HAS_CHROMIUM)('the console in Chromium', () => {
  test('a wrong key is refused without saying whether it exists', async ({ system, browser, owner }) => {
    const { context, page, problems } = await openContext(browser, system.baseUrl);
    try {
      await page.goto(`${system.baseUrl}/console/`);
      expect(new URL(page.url()).pathname).toBe('/console/sign-in');
      await view(page, 'sign-in');
      const unknown = `sk_${'x'.repeat(owner.apiKey.length - 3)}`;
      const messages: string[] = [];
      for (const secret of [unknown, 'not-a-key']) {
        // With the keyboard alone: the field has the focus, Enter submits.
        await page.getByLabel('API key (or operator token)').focus();
        await page.keyboard.type(secret);
        const [response] = await Promise.all([
          page.waitForResponse((r) => r.url().endsWith('/console/sign-in') && r.request().method() === 'POST'),
          page.keyboard.press('Enter'),
        ]);
        expect(response.status()).toBe(401);
        messages.push(await page.getByRole('alert').innerText());
      }
      expect(messages).toEqual(Array(2).fill('Sign-in failed: that key or token is not valid.'));
      expect(await context.cookies()).toEqual([]);
      await view(page, 'sign-in-refused');
      expect(problems).toEqual([]);
    } finally {
      await context.close();
    }
  });

  test('an owner uploads 1,000 credits, watches them finish and reverses a payout', async ({
    system,
    browser,
    owner,
    makeQuest,
  }) => {
    const questId = await makeQuest({ totalPoints: 100_000, name: 'Summer drop' });
    const accounts = await createAccounts(system.db.sql, 990);
    const strangers = Array.from({ length: 10 }, randomAddress);
    const dir = mkdtempSync(join(tmpdir(), 'console-'));
    const csv = join(dir, 'credits.csv');
    writeFileSync(csv, `address,points\n${[...accounts, ...strangers].map((a) => `${a},5`).join('\n')}\n`);

    const { context, page, problems } = await openContext(browser, system.baseUrl);
    try {
      await signIn(page, system.baseUrl, owner.apiKey);
      await page.getByRole('heading', { name: 'My quests' }).waitFor();
      const cookie = (await context.cookies()).find((c) => c.name === 'quest_console')!;
      expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/console' });
      expect(cookie.expires).toBeGreaterThan(Date.now() / 1000);
      await view(page, 'owner-quests');

      await page.getByRole('link', { name: 'Summer drop' }).click();
      await page.getByRole('heading', { name: 'Summer drop' }).waitFor();
      expect(await page.locator('#points-remaining').innerText()).toBe('100,000');
      await view(page, 'owner-quest');
      // On a phone: the same page, nothing wider than the screen (wide tables scroll on their own).
      await page.setViewportSize({ width: 390, height: 844 });
      expect(await page.evaluate('document.documentElement.scrollWidth <= window.innerWidth')).toBe(true);
      await page.screenshot({ path: join(SHOTS, 'owner-quest-phone.png'), fullPage: true });
      await page.setViewportSize({ width: 1100, height: 900 });

      await page.locator('#csv').setInputFiles(csv);
      await page.getByRole('button', { name: 'Upload and credit' }).click();
      const done = page.locator('tr[data-batch-done="completed"]');
      await done.waitFor({ timeout: 30_000 });
      expect(await done.innerText()).toContain('1,000 of 1,000 processed, 990 credited, 10 failed');
      expect(await page.locator('#points-remaining').innerText()).toBe('95,050');
      await view(page, 'owner-upload-finished');

      const [download] = await Promise.all([
        page.waitForEvent('download'),
        done.getByRole('link', { name: /Failed rows/ }).click(),
      ]);
      const failed = readFileSync((await download.path())!, 'utf8')
        .trim()
        .split('\n');
      expect(failed[0]).toBe('row,address,points,error');
      expect(failed.slice(1).map((l) => l.split(',')[3])).toEqual(Array(10).fill('ACCOUNT_NOT_FOUND'));
      expect(failed.slice(1).map((l) => l.split(',')[1]!.toLowerCase())).toEqual(strangers.map((s) => s.toLowerCase()));

      // Reverse one payout, found by its address, with a confirm step.
      const target = accounts[17]!;
      await page.goto(`${system.baseUrl}/console/quests/${questId}`);
      await page.getByLabel('Find the payouts of an address').fill(target.toLowerCase());
      await page.getByRole('button', { name: 'Search' }).click();
      await page.getByRole('link', { name: /^Reverse payout/ }).waitFor();
      expect(await page.getByRole('link', { name: /^Reverse payout/ }).count()).toBe(1);
      await page.getByRole('link', { name: /^Reverse payout/ }).click();
      await page.getByRole('heading', { name: 'Reverse a payout?' }).waitFor();
      await view(page, 'owner-reverse-confirm');
      await page.getByLabel('Reason (optional)').fill('test credit');
      await page.getByRole('button', { name: 'Confirm reversal' }).click();
      await page.getByRole('status').filter({ hasText: 'Reversed 5 points' }).waitFor();
      expect(await page.locator('#points-remaining').innerText()).toBe('95,055');
      await view(page, 'owner-reversed');

      await page.getByRole('link', { name: 'Webhooks' }).click();
      await page.getByRole('heading', { name: 'Webhooks' }).waitFor();
      await view(page, 'owner-webhooks');
      expect(problems).toEqual([]);
    } finally {
      await context.close();
    }
  });

  test('an operator creates an owner, a quest and a key; the key signs the owner in', async ({ system, browser }) => {
    const { context, page, problems } = await openContext(browser, system.baseUrl);
    const name = `Acme ${Date.now().toString(36)}`;
    let issued: string;
    try {
      await signIn(page, system.baseUrl, ADMIN_TOKEN);
      await page.getByRole('heading', { name: 'Owners and keys' }).waitFor();
      await view(page, 'operator-owners');

      await page.getByLabel('Name', { exact: true }).fill(name);
      await page.getByLabel('Pass address').fill(randomAddress());
      await page.getByRole('button', { name: 'Create owner and key' }).click();
      const first = (await page.locator('#new-api-key').innerText()).trim();
      expect(first).toMatch(/^sk_/);
      await view(page, 'operator-key-once');

      await page.getByRole('link', { name: 'Quests', exact: true }).click();
      const ownerId = await page.locator('#quest-owner option', { hasText: name }).getAttribute('value');
      await page.getByLabel('Owner').selectOption(ownerId!);
      await page.getByLabel('Name', { exact: true }).fill('Launch week');
      await page.getByLabel('Total points').fill('5000');
      await page.getByRole('button', { name: 'Create quest' }).click();
      await page.getByRole('status').filter({ hasText: 'Launch week' }).waitFor();
      await view(page, 'operator-quests');

      await page.getByRole('link', { name: 'Owners & keys' }).click();
      await page.getByRole('button', { name: `Issue a new key for ${name}` }).click();
      issued = (await page.locator('#new-api-key').innerText()).trim();
      expect(issued).toMatch(/^sk_/);
      expect(issued).not.toBe(first);
      await page.getByRole('button', { name: `Revoke key ${displayPrefix(first)} of ${name}` }).click();
      await page.getByRole('status').filter({ hasText: 'revoked' }).waitFor();

      // Account import: the file goes up with a progress bar; the counts come back.
      const addresses = join(mkdtempSync(join(tmpdir(), 'console-')), 'accounts.csv');
      writeFileSync(addresses, `address\n${randomAddress()}\n${randomAddress()}\nnot-an-address\n`);
      await page.getByRole('link', { name: 'Accounts' }).click();
      await page.getByLabel('File of addresses').setInputFiles(addresses);
      await page.getByRole('button', { name: 'Import accounts' }).click();
      await page.getByRole('status').filter({ hasText: '2 accounts created, 0 already there, 1 invalid (lines 4)' }).waitFor();
      await view(page, 'operator-accounts');

      await page.getByRole('link', { name: 'Pool' }).click();
      await page.getByRole('heading', { name: 'Worker pool' }).waitFor();
      expect(await page.locator('main').innerText()).toMatch(/1 live worker/);
      await view(page, 'operator-pool');

      await page.getByRole('link', { name: 'Flags' }).click();
      await page.getByRole('button', { name: 'Turn campaigns off' }).waitFor();
      await view(page, 'operator-flags');
      await page.getByRole('link', { name: 'Audit' }).click();
      await page.getByRole('button', { name: 'Run the audit' }).click();
      await page.getByRole('heading', { name: 'The ledger is consistent' }).waitFor();
      await view(page, 'operator-audit');
      expect(problems).toEqual([]);
    } finally {
      await context.close();
    }

    const owner = await openContext(browser, system.baseUrl);
    try {
      await signIn(owner.page, system.baseUrl, issued);
      await owner.page.getByRole('link', { name: 'Launch week' }).waitFor();
      expect(owner.problems).toEqual([]);
    } finally {
      await owner.context.close();
    }
  });
});
