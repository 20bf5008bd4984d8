import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOwner, type SeededOwner, startTestApp, type TestApp } from './helpers.ts';

let t: TestApp;
let unconfigured: TestApp;
let alice: SeededOwner;
let bob: SeededOwner;

beforeAll(async () => {
  t = await startTestApp({ env: { WEBHOOK_SECRET_KEY: randomBytes(32).toString('base64') } });
  unconfigured = await startTestApp({ db: t.db });
  alice = await createOwner(t.sql);
  bob = await createOwner(t.sql);
});
afterAll(async () => {
  await unconfigured?.close();
  await t?.close();
});

const call = (app: TestApp, method: 'GET' | 'POST' | 'DELETE', url: string, key: string, payload?: object) =>
  app.request({ method, url, headers: { 'x-api-key': key }, ...(payload === undefined ? {} : { payload }) });

describe('webhook endpoints', () => {
  it('creates an endpoint with a secret shown once and stored encrypted, lists it without, deletes it', async () => {
    const created = await call(t, 'POST', '/webhook-endpoints', alice.apiKey, {
      url: 'https://hooks.example.com/quest',
      events: ['payout.created', 'payout.created', 'batch.completed'],
      description: 'ours',
    });
    expect(created.statusCode, created.body).toBe(200);
    const { endpoint } = created.json();
    expect(endpoint).toMatchObject({
      id: expect.stringMatching(/^whe_/),
      url: 'https://hooks.example.com/quest',
      events: ['payout.created', 'batch.completed'],
      description: 'ours',
      status: 'enabled',
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
    });
    const [row] = await t.sql<{ secret_enc: Buffer }[]>`select secret_enc from webhook_endpoints where id = ${endpoint.id}`;
    expect(row!.secret_enc.includes(Buffer.from(endpoint.secret))).toBe(false);
    const listed = (await call(t, 'GET', '/webhook-endpoints', alice.apiKey)).json().endpoints;
    expect(listed).toHaveLength(1);
    expect(listed[0].secret).toBeUndefined();
    expect((await call(t, 'GET', '/webhook-endpoints', bob.apiKey)).json().endpoints).toEqual([]);

    // Another owner's endpoint is not found, whatever the operation.
    for (const [method, path] of [
      ['DELETE', ''],
      ['POST', '/secret'],
      ['GET', '/deliveries'],
    ] as const) {
      const res = await call(t, method, `/webhook-endpoints/${endpoint.id}${path}`, bob.apiKey);
      expect([res.statusCode, res.json().code], `${method} ${path}`).toEqual([404, 'WEBHOOK_ENDPOINT_NOT_FOUND']);
    }
    const replay = await call(t, 'POST', `/webhook-endpoints/${endpoint.id}/replay`, bob.apiKey, {
      since: '2026-01-01T00:00:00Z',
    });
    expect(replay.statusCode).toBe(404);

    const deleted = await call(t, 'DELETE', `/webhook-endpoints/${endpoint.id}`, alice.apiKey);
    expect(deleted.statusCode).toBe(200);
    expect((await call(t, 'DELETE', `/webhook-endpoints/${endpoint.id}`, alice.apiKey)).statusCode).toBe(404);
    expect((await call(t, 'GET', '/webhook-endpoints', alice.apiKey)).json().endpoints).toEqual([]);
  });

  it('refuses URLs that are not https or point at private addresses, and bad bodies, with 400', async () => {
    for (const url of [
      'http://hooks.example.com/',
      'https://127.0.0.1/',
      'https://169.254.169.254/latest/meta-data',
      'https://[::1]/',
      'https://localhost/',
      'https://localhost./',
      'https://[::127.0.0.1]/',
      'https://[::a9fe:a9fe]/latest/meta-data',
      'https://user:pw@hooks.example.com/',
    ]) {
      const res = await call(t, 'POST', '/webhook-endpoints', alice.apiKey, { url });
      expect([res.statusCode, res.json().code], url).toEqual([400, 'WEBHOOK_URL_NOT_ALLOWED']);
    }
    for (const body of [{}, { url: 'https://a.example/', events: ['nope'] }, { url: 'https://a.example/', extra: 1 }]) {
      const res = await call(t, 'POST', '/webhook-endpoints', alice.apiKey, body);
      expect([res.statusCode, res.json().code], JSON.stringify(body)).toEqual([400, 'VALIDATION_FAILED']);
    }
    for (const body of [
      { url: 'https://a.example/', description: 'ours\u0000' },
      { url: 'https://a.example/', description: 'ours \uD83D' },
      { url: 'https://a.example/\uDE00' },
    ]) {
      const res = await call(t, 'POST', '/webhook-endpoints', alice.apiKey, body);
      expect([res.statusCode, res.json().code], JSON.stringify(body)).toEqual([400, 'VALIDATION_FAILED']);
      expect(res.json().details[0].message).toBe('must not contain a NUL character or an unpaired surrogate');
    }
    const badId = await call(t, 'DELETE', '/webhook-endpoints/whe_nope', alice.apiKey);
    expect([badId.statusCode, badId.json().code]).toEqual([400, 'VALIDATION_FAILED']);
  });

  it('refuses a replay since a time PostgreSQL cannot take (year 0, a negative year) with 400', async () => {
    const created = await call(t, 'POST', '/webhook-endpoints', alice.apiKey, { url: 'https://hooks.example.com/replay' });
    const { id } = created.json().endpoint;
    for (const since of [
      '0000-01-01T00:00:00Z',
      '0000-12-31T23:59:59.999Z',
      '-000001-01-01T00:00:00Z',
      '-271821-04-20T00:00:00Z',
    ]) {
      const res = await call(t, 'POST', `/webhook-endpoints/${id}/replay`, alice.apiKey, { since });
      expect([res.statusCode, res.json().code], since).toEqual([400, 'VALIDATION_FAILED']);
    }
    const earliest = await call(t, 'POST', `/webhook-endpoints/${id}/replay`, alice.apiKey, { since: '0001-01-01T00:00:00Z' });
    expect([earliest.statusCode, earliest.json()]).toEqual([200, { deliveries: 0 }]);
    await call(t, 'DELETE', `/webhook-endpoints/${id}`, alice.apiKey);
  });

  it('answers 503 WEBHOOKS_NOT_CONFIGURED without WEBHOOK_SECRET_KEY, and 401 without a valid key', async () => {
    const res = await call(unconfigured, 'POST', '/webhook-endpoints', alice.apiKey, { url: 'https://hooks.example.com/' });
    expect([res.statusCode, res.json().code]).toEqual([503, 'WEBHOOKS_NOT_CONFIGURED']);
    const anonymous = await t.request({ method: 'GET', url: '/webhook-endpoints' });
    expect([anonymous.statusCode, anonymous.json().code]).toEqual([401, 'INVALID_API_KEY']);
  });
});
