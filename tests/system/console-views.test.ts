import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect } from 'vitest';
import { randomAddress } from '@quest/testing';
import { bundleConsoleScript } from '../../apps/api/src/console/script.ts';
import { ADMIN_TOKEN, consoleTest, HAS_CHROMIUM, openContext, signIn, view } from './console-browser.ts';

/**
 * The console's other views in a real browser (the main journeys: console.test.ts), each
 * screenshotted and checked with axe: an owner's webhook endpoints (add one, its page and delivery
 * log), and the operator's campaigns, account import (the file uploaded by the page's script),
 * pool, feature flags and audit. No worker: none of these waits for a decision.
 */
const test = consoleTest({
  workers: 0,
  partitions: 2,
  env: { WEBHOOK_SECRET_KEY: randomBytes(32).toString('hex'), WEBHOOK_ALLOW_PRIVATE_URLS: 'true' },
});

describe("the console's script from the API process", () => {
  test('is the same bundle the TypeScript API serves (the built API carries it in its own bundle)', async ({ system }) => {
    const res = await fetch(`${system.baseUrl}/console/assets/console.js`);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe(await bundleConsoleScript());
  });
});

describe.skipIf(!HAS_CHROMIUM)('the console views in Chromium', () => {
  test("an owner's webhook endpoints", async ({ system, browser, owner }) => {
    const { context, page, problems } = await openContext(browser, system.baseUrl);
    try {
      await signIn(page, system.baseUrl, owner.apiKey);
      await page.getByRole('link', { name: 'Webhooks' }).click();
      await page.getByLabel('URL (https://…)').fill('https://127.0.0.1:9/hooks/quests');
      await page.getByRole('button', { name: 'Add endpoint' }).click();
      expect(await page.locator('#new-webhook-secret').innerText()).toMatch(/^whsec_/);
      await view(page, 'owner-webhooks');
      await page.getByRole('link', { name: 'https://127.0.0.1:9/hooks/quests' }).click();
      await page.getByRole('heading', { name: 'Delivery log' }).waitFor();
      await view(page, 'owner-webhook-endpoint');
      expect(problems).toEqual([]);
    } finally {
      await context.close();
    }
  });

  test("the operator's campaigns, account import, pool, flags and audit", async ({ system, browser }) => {
    const { context, page, problems } = await openContext(browser, system.baseUrl);
    try {
      await signIn(page, system.baseUrl, ADMIN_TOKEN);
      await page.getByRole('link', { name: 'Campaigns' }).click();
      await page.getByLabel('Name', { exact: true }).fill('Autumn');
      await page.getByRole('button', { name: 'Create campaign' }).click();
      await page.getByRole('status').filter({ hasText: 'Autumn' }).waitFor();
      await view(page, 'operator-campaigns');

      // The file goes up with a progress bar; the counts come back.
      const file = join(mkdtempSync(join(tmpdir(), 'console-')), 'accounts.csv');
      writeFileSync(file, `address\n${randomAddress()}\n${randomAddress()}\nnot-an-address\n`);
      await page.getByRole('link', { name: 'Accounts' }).click();
      await page.getByLabel('File of addresses').setInputFiles(file);
      await page.getByRole('button', { name: 'Import accounts' }).click();
      await page.getByRole('status').filter({ hasText: '2 accounts created, 0 already there, 1 invalid (lines 4)' }).waitFor();
      await view(page, 'operator-accounts');

      await page.getByRole('link', { name: 'Pool' }).click();
      await page.getByRole('heading', { name: 'Partitions' }).waitFor();
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
  });
});
