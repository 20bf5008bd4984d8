import { existsSync } from 'node:fs';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { partitionQueueName } from '@quest/queue';
import { createTestRedis, type TestRedis } from '@quest/testing';
import { startTestApp, type TestApp } from './helpers.ts';

/**
 * The pages the API serves, as a browser shows them: Chromium (the system's, through
 * playwright-core; no browser download). The docs page loads /openapi.json and writes its examples
 * with this server's address; the queue console renders the queue names with translated labels,
 * loading nothing from another origin. Skipped, with the reason, only where no Chromium is
 * installed (`apt-get install -y chromium`); CHROMIUM_PATH names another binary.
 */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const HAS_CHROMIUM = existsSync(CHROMIUM);
if (!HAS_CHROMIUM) console.warn(`queue console browser test skipped: no Chromium at ${CHROMIUM} (apt-get install -y chromium)`);

const TOKEN = 'operator-token-0123456789';
let redis: TestRedis;
let t: TestApp;
let base: string;
let browser: Browser;

beforeAll(async () => {
  if (!HAS_CHROMIUM) return;
  redis = await createTestRedis();
  t = await startTestApp({
    env: { REDIS_URL: redis.url, QUEUE_PREFIX: redis.prefix, QUEUE_PARTITIONS: '4', ADMIN_TOKEN: TOKEN },
  });
  base = await t.app.listen({ port: 0, host: '127.0.0.1' });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
});
afterAll(async () => {
  await browser?.close();
  await t?.close();
  await redis?.cleanup();
});

describe.skipIf(!HAS_CHROMIUM)('the docs page in Chromium', () => {
  it('loads /openapi.json and shows the examples with this server as BASE', async () => {
    const page = await browser.newPage();
    try {
      await page.goto(`${base}/docs`);
      await page.getByText(`BASE=${base}`).first().waitFor({ state: 'visible' });
      expect(await page.locator('.topbar input').first().inputValue()).toBe(`${base}/openapi.json`);
    } finally {
      await page.close();
    }
  });
});

describe.skipIf(!HAS_CHROMIUM)('the queue console in Chromium', () => {
  it('renders the partition queues with translated labels, every request to the API itself', async () => {
    const context = await browser.newContext({ httpCredentials: { username: 'operator', password: TOKEN } });
    try {
      const page = await context.newPage();
      const elsewhere: string[] = [];
      const failed: string[] = [];
      page.on('request', (r) => {
        if (!r.url().startsWith(base) && !r.url().startsWith('data:')) elsewhere.push(r.url());
      });
      page.on('response', (r) => {
        if (r.status() >= 400) failed.push(`${r.status()} ${r.url()}`);
      });
      await page.goto(`${base}/admin/queues`);
      for (let p = 0; p < 4; p++)
        await page.getByText(partitionQueueName(p), { exact: true }).first().waitFor({ state: 'visible' });
      const text = await page.locator('body').innerText();
      expect(text, 'untranslated i18n keys').not.toMatch(/\b[A-Z]+(?:\.[A-Z_]+){1,}\b/);
      expect(elsewhere, 'requests to other origins').toEqual([]);
      expect(failed, 'failed requests').toEqual([]);
      // The page's own fonts, not the browser's fallback (the function runs in the page).
      const plexLoaded = await page.evaluate(
        'document.fonts.load("500 16px \'IBM Plex Sans\'").then((faces) => faces.length > 0)',
      );
      expect(plexLoaded).toBe(true);
    } finally {
      await context.close();
    }
  });
});
