import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './helpers.ts';

/** GET /: a 200 pointing at the console, the docs and the OpenAPI document, never a 404. */

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  await t?.close();
});

const LINKS = ['/console', '/docs', '/openapi.json'];

describe('GET /', () => {
  it('answers a client (curl, */*, JSON) with the links as JSON', async () => {
    for (const accept of [undefined, '*/*', 'application/json', 'application/json, text/html']) {
      const res = await t.app.inject({ method: 'GET', url: '/', headers: accept ? { accept } : {} });
      expect(res.statusCode, accept).toBe(200);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(Object.values(res.json().links).map((l) => (l as { href: string }).href)).toEqual(LINKS);
    }
  });

  it('answers a browser with an HTML page linking them, and each link answers', async () => {
    const res = await t.app.inject({
      method: 'GET',
      url: '/',
      headers: { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' },
    });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.headers.vary).toMatch(/accept/i);
    for (const href of LINKS) {
      expect(res.body).toContain(`href="${href}"`);
      const target = await t.app.inject({ method: 'GET', url: href });
      expect([200, 302, 303], href).toContain(target.statusCode);
    }
  });

  it('is not part of the API document', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json() as { paths: Record<string, unknown> };
    expect(doc.paths['/']).toBeUndefined();
  });
});
