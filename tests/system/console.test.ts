import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { displayPrefix } from '@quest/domain';
import { describe, expect } from 'vitest';
import { createAccounts, randomAddress } from '@quest/testing';
import {
  ADMIN_TOKEN,
  consoleTest,
  HAS_CHROMIUM,
  openContext,
  phoneProblems,
  screenshot,
  signIn,
  view,
} from './console-browser.ts';

/**
 * The console's journeys in a real browser (see console-browser.ts), against the real API and a
 * worker. An owner signs in,
 * sees a quest's remaining points, uploads a 1,000-row CSV and watches it finish, downloads its
 * failed rows, reverses a payout and sees the budget return; an operator creates an owner, a
 * quest and a key; a wrong key is refused. Every view is screenshotted into
 * test-results/console/ and checked with axe, and no page loads anything from another origin or
 * logs an error. The other views: console-views.test.ts.
 */

const test = consoleTest({ workers: 1, partitions: 2 });

/** The upload journey's bound: about 50 s alone here, eight axe checks and a phone check included, more on a busy machine. */
const JOURNEY_TIMEOUT_MS = 150_000;

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

  test(
    'an owner uploads 1,000 credits, watches them finish and reverses a payout',
    async ({ system, browser, owner, makeQuest }) => {
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
        expect(await phoneProblems(page)).toEqual([]);
        await page.setViewportSize({ width: 1100, height: 900 });

        await page.getByRole('link', { name: 'Summer drop' }).click();
        await page.getByRole('heading', { name: 'Summer drop' }).waitFor();
        expect(await page.locator('#points-remaining').innerText()).toBe('100,000');
        await view(page, 'owner-quest');
        // On a phone: the same page, nothing wider than the screen (wide tables scroll on their own).
        await page.setViewportSize({ width: 390, height: 844 });
        expect(await page.evaluate('document.documentElement.scrollWidth <= window.innerWidth')).toBe(true);
        await screenshot(page, 'owner-quest-phone');
        await page.setViewportSize({ width: 1100, height: 900 });

        await page.locator('#csv').setInputFiles(csv);
        await page.getByRole('button', { name: 'Upload and credit' }).click();
        const done = page.locator('tr[data-batch-done="completed"]');
        await done.waitFor({ timeout: 30_000 });
        expect(await done.innerText()).toContain('1,000 of 1,000 processed, 990 credited, 10 failed');
        expect(await page.locator('#points-remaining').innerText()).toBe('95,050');
        // The new row has its time, and the charts and recent payouts show the batch without a reload.
        expect(await done.innerText()).toMatch(/\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC/);
        expect(await page.getByText('990 credits in the last 1 h.').count()).toBe(1);
        expect(await page.getByRole('link', { name: /^Reverse payout/ }).count()).toBe(25);
        await view(page, 'owner-upload-finished');
        // On a phone (375 px): the budget bar whole, the batches table within the screen, ids on a line or two.
        expect(await phoneProblems(page)).toEqual([]);
        await page.locator('#batches-h').scrollIntoViewIfNeeded();
        await screenshot(page, 'owner-upload-finished-phone', { fullPage: false });
        await page.setViewportSize({ width: 1100, height: 900 });

        const [download] = await Promise.all([
          page.waitForEvent('download'),
          done.getByRole('link', { name: /Failed rows/ }).click(),
        ]);
        const failed = readFileSync((await download.path())!, 'utf8')
          .trim()
          .split('\n');
        expect(failed[0]).toBe('line,address,points,code,reason');
        // Each row at its line in the uploaded file (the header is line 1): the strangers are its last ten.
        expect(failed.slice(1).map((l) => l.split(',')[0])).toEqual(strangers.map((_, i) => String(992 + i)));
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

        expect(problems).toEqual([]);
      } finally {
        await context.close();
      }
    },
    JOURNEY_TIMEOUT_MS,
  );

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
      // Revoking asks first.
      const asked: string[] = [];
      page.once('dialog', (dialog) => {
        asked.push(dialog.message());
        void dialog.accept();
      });
      await page.getByRole('button', { name: `Revoke key ${displayPrefix(first)} of ${name}` }).click();
      await page.getByRole('status').filter({ hasText: 'revoked' }).waitFor();
      expect(asked).toEqual([expect.stringMatching(/^Revoke key sk_/)]);

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
