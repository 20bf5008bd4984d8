import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { partitionQueueName, WEBHOOK_QUEUE } from '@quest/queue';
import { createTestRedis, type TestRedis } from '@quest/testing';
import { startTestApp, type TestApp } from './helpers.ts';

const TOKEN = 'operator-token-0123456789';
let redis: TestRedis;
let withConsole: TestApp;
let withoutConsole: TestApp;

beforeAll(async () => {
  redis = await createTestRedis();
  const env = { REDIS_URL: redis.url, QUEUE_PREFIX: redis.prefix, QUEUE_PARTITIONS: '16' };
  withConsole = await startTestApp({ env: { ...env, ADMIN_TOKEN: TOKEN } });
  withoutConsole = await startTestApp({ env });
});
afterAll(async () => {
  await withConsole?.close();
  await withoutConsole?.close();
  await redis?.cleanup();
});

const basic = (password: string) => `Basic ${Buffer.from(`operator:${password}`).toString('base64')}`;

describe('the queue console at /admin/queues', () => {
  it('answers 401 with the error envelope and a login prompt without the operator token, or with a wrong one', async () => {
    for (const authorization of [undefined, `Bearer ${TOKEN}x`, basic('nope'), 'sk_not_an_operator_token']) {
      for (const url of ['/admin/queues', '/admin/queues/api/queues']) {
        const res = await withConsole.app.inject({ url, headers: authorization ? { authorization } : {} });
        expect(res.statusCode, `${url} ${authorization}`).toBe(401);
        expect(res.json()).toMatchObject({ statusCode: 401, code: 'ADMIN_TOKEN_INVALID', requestId: expect.any(String) });
        expect(res.headers['www-authenticate']).toMatch(/^Basic realm=/);
      }
    }
  });

  it('counts wrong tokens as failed authentications: past the limit even the right one is refused 429', async () => {
    const limited = await startTestApp({
      db: withConsole.db,
      env: {
        REDIS_URL: redis.url,
        QUEUE_PREFIX: `${redis.prefix}_limited`,
        ADMIN_TOKEN: TOKEN,
        RATE_LIMIT_AUTH_FAILURES_MAX: '3',
      },
    });
    try {
      const get = (authorization?: string) =>
        limited.app.inject({
          url: '/admin/queues/api/queues',
          remoteAddress: '10.9.8.7',
          headers: authorization ? { authorization } : {},
        });
      // No token at all (a browser before its login prompt) is not a failed authentication.
      for (let i = 0; i < 4; i++) expect((await get()).statusCode).toBe(401);
      for (const wrong of [`Bearer ${TOKEN}x`, basic('nope'), 'Bearer guess']) expect((await get(wrong)).statusCode).toBe(401);
      const refused = await get(`Bearer ${TOKEN}`);
      expect([refused.statusCode, refused.json().code]).toEqual([429, 'RATE_LIMITED']);
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
      // Another address is not affected.
      const other = await limited.app.inject({
        url: '/admin/queues/api/queues',
        remoteAddress: '10.9.8.6',
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      expect(other.statusCode).toBe(200);
    } finally {
      await limited.close();
    }
  });

  it('lists the 16 partition queues and the webhook delivery queue, read-only, with the token (Bearer or Basic)', async () => {
    const page = await withConsole.app.inject({ url: '/admin/queues', headers: { authorization: basic(TOKEN) } });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toMatch(/text\/html/);
    const api = await withConsole.app.inject({
      url: '/admin/queues/api/queues?activeQueue=&page=1&jobsPerPage=10',
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(api.statusCode).toBe(200);
    const queues = api.json().queues as { name: string; readOnlyMode: boolean }[];
    expect(queues.map((q) => q.name).sort()).toEqual(
      [...Array.from({ length: 16 }, (_, p) => partitionQueueName(p)), WEBHOOK_QUEUE].sort(),
    );
    expect(queues.every((q) => q.readOnlyMode)).toBe(true);
    const action = await withConsole.app.inject({
      method: 'PUT',
      url: `/admin/queues/api/queues/${encodeURIComponent(partitionQueueName(0))}/clean/completed`,
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(action.statusCode).toBe(405);
    expect(action.json().code).toBe('METHOD_NOT_ALLOWED');
  });

  it('serves a page that loads nothing from another origin: its fonts come from the API', async () => {
    const authorization = `Bearer ${TOKEN}`;
    const page = await withConsole.app.inject({ url: '/admin/queues', headers: { authorization } });
    expect(page.statusCode).toBe(200);
    expect(page.body.match(/(?:https?:)?\/\/[^\s"'<>]+/g) ?? []).toEqual([]);
    expect(page.body).toContain('href="fonts/plex.css"');
    const css = await withConsole.app.inject({ url: '/admin/queues/fonts/plex.css', headers: { authorization } });
    expect(css.statusCode).toBe(200);
    expect(css.headers['content-type']).toMatch(/^text\/css/);
    const files = [...css.body.matchAll(/url\(\.\/([^)]+)\)/g)].map((m) => m[1]!);
    expect(files).toHaveLength(5);
    for (const file of files) {
      const font = await withConsole.app.inject({ url: `/admin/queues/fonts/${file}`, headers: { authorization } });
      expect(font.statusCode, file).toBe(200);
      expect(font.rawPayload.subarray(0, 4).toString('latin1'), file).toBe('wOF2');
    }
    const missing = await withConsole.app.inject({ url: '/admin/queues/fonts/..%2Fpackage.json', headers: { authorization } });
    expect(missing.statusCode).toBe(404);
    expect((await withConsole.app.inject({ url: '/admin/queues/fonts/plex.css' })).statusCode).toBe(401);
  });

  it('does not exist when ADMIN_TOKEN is unset', async () => {
    const res = await withoutConsole.app.inject({ url: '/admin/queues', headers: { authorization: `Bearer ${TOKEN}` } });
    expect(res.statusCode).toBe(404);
    expect(res.json().code).toBe('ROUTE_NOT_FOUND');
  });
});
