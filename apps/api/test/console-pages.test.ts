import { randomBytes } from 'node:crypto';
import type { RequestOutcome } from '@quest/domain';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundleConsoleScript } from '../src/console/script.ts';
import {
  createAccount,
  createApiKey,
  createOwner,
  createPayouts,
  createQuest,
  scriptedAllocator,
  startTestApp,
  type TestApp,
} from './helpers.ts';

/**
 * What the console's pages say, through app.inject: a refused reversal in words with the way back,
 * the operator's quest list with owners' names and honest percentages, counts in the right number,
 * an endpoint's own URL on its page, and the browser script as its bundle.
 */

const TOKEN = 'operator-token-0123456789';
let t: TestApp;
let decide: () => Promise<RequestOutcome> = async () => ({ status: 'rejected', code: 'REVERSAL_EXCEEDS_PAYOUT' });

beforeAll(async () => {
  t = await startTestApp({
    env: { ADMIN_TOKEN: TOKEN, WEBHOOK_SECRET_KEY: randomBytes(32).toString('hex'), WEBHOOK_ALLOW_PRIVATE_URLS: 'true' },
    allocator: scriptedAllocator({ onAllocate: async () => ({ kind: 'decided', outcome: await decide() }) }),
  });
});
afterAll(async () => {
  await t?.close();
});

const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();
const csrfOf = (page: LightMyRequestResponse) => /name="_csrf" value="([^"]+)"/.exec(page.body)?.[1];

async function session(secret: string) {
  const res = await t.app.inject({
    method: 'POST',
    url: '/console/sign-in',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: form({ apiKey: secret }),
  });
  const cookie = String(res.headers['set-cookie']).split(';')[0]!;
  const get = (url: string) => t.app.inject({ url, headers: { cookie } });
  const post = async (url: string, fields: Record<string, string>) =>
    t.app.inject({
      method: 'POST',
      url,
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      payload: form({ _csrf: csrfOf(await get('/console/'.concat(secret === TOKEN ? 'operator' : 'quests')))!, ...fields }),
    });
  return { get, post };
}

/** The rows of the first table body on a page, tags stripped. */
const rowsText = (body: string) =>
  [...(/<tbody>([\s\S]*?)<\/tbody>/.exec(body)?.[1] ?? '').matchAll(/<tr[\s\S]*?<\/tr>/g)].map((m) =>
    m[0].replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' '),
  );

describe('the console after a refused reversal', () => {
  it('says what went wrong in words and links back to the payout and its quest', async () => {
    decide = async () => ({ status: 'rejected', code: 'REVERSAL_EXCEEDS_PAYOUT' });
    const owner = await createOwner(t.sql);
    const questId = await createQuest(t.sql, { ownerId: owner.id, totalPoints: 1000 });
    const [payout] = await createPayouts(t.sql, questId, await createAccount(t.sql), [50]);
    const { post } = await session(owner.apiKey);
    const res = await post(`/console/quests/${questId}/payouts/${payout!.id}/reverse`, { points: '40' });
    expect(res.statusCode).toBe(400);
    const alert = /<p role="alert"[^>]*>([\s\S]*?)<\/p>/.exec(res.body)![1]!;
    expect(alert).toContain('exceed the payout');
    expect(alert).not.toContain('REVERSAL_EXCEEDS_PAYOUT');
    expect(res.body).toContain(`href="/console/quests/${questId}/payouts/${payout!.id}/reverse"`);
    expect(res.body).toContain(`href="/console/quests/${questId}"`);
  });
});

describe("the operator's lists", () => {
  it("shows each quest's owner by name and never rounds a budget up to 100 %", async () => {
    const owner = await createOwner(t.sql, { name: 'Quill & Co' });
    await createQuest(t.sql, { ownerId: owner.id, name: 'Almost full', totalPoints: 10_000, pointsRemaining: 9_999 });
    const { get } = await session(TOKEN);
    const row = rowsText((await get('/console/operator/quests')).body).find((r) => r.includes('Almost full'))!;
    expect(row).toContain('Quill &amp; Co');
    expect(row).not.toContain(owner.id);
    expect(row).toContain('(99.9%)');
  });

  it('counts one quest and one key in the singular', async () => {
    const owner = await createOwner(t.sql, { name: 'Solo' });
    await createQuest(t.sql, { ownerId: owner.id });
    const { get } = await session(TOKEN);
    const panel = /aria-label="Owner Solo">([\s\S]*?)<\/p>/.exec((await get('/console/operator')).body)![1]!;
    expect(panel).toContain('1 quest ·');
    expect(panel).toContain('1 active key');
    expect(panel).not.toContain('keys');
    await createApiKey(t.sql, owner.id);
    const again = /aria-label="Owner Solo">([\s\S]*?)<\/p>/.exec((await get('/console/operator')).body)![1]!;
    expect(again).toContain('2 active keys');
  });
});

describe("an endpoint's page", () => {
  it('names the URL it delivers to', async () => {
    const owner = await createOwner(t.sql);
    const { get, post } = await session(owner.apiKey);
    const created = await post('/console/webhooks', { url: 'https://127.0.0.1:9/hooks/orders' });
    const id = /href="\/console\/webhooks\/(whe_[^"]+)"/.exec(created.body)![1]!;
    const page = await get(`/console/webhooks/${id}`);
    expect(page.statusCode).toBe(200);
    const main = page.body.slice(page.body.indexOf('<main'));
    expect(main.slice(0, main.indexOf('<form'))).toContain('https://127.0.0.1:9/hooks/orders');
  });
});

describe("the console's script", () => {
  it('is served as esbuild bundled browser/console.ts: plain JavaScript, no TypeScript left', async () => {
    const res = await t.app.inject({ url: '/console/assets/console.js' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(res.body).toBe(await bundleConsoleScript());
    expect(res.body).toMatch(/^"use strict";\n\(\(\) => \{/);
    expect(res.body).toContain('function watchBatch(');
    expect(res.body).not.toMatch(/\bas HTML|: HTMLElement\b|interface BatchStatus/);
  });
});
