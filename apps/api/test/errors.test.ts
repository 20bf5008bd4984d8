import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { createSql } from '@quest/db';
import { DomainError } from '@quest/domain';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createOwner, createQuest, LogCapture, startTestApp, type TestApp, UNREACHABLE_DATABASE_URL } from './helpers.ts';

/** Test-only routes (hidden from the document) that exercise the error handler. */
function testRoutes(app: FastifyInstance) {
  const zApp = app.withTypeProvider<ZodTypeProvider>();
  zApp.post(
    '/__test/echo',
    {
      schema: {
        hide: true,
        body: z.object({ n: z.number().int(), items: z.array(z.object({ address: z.string().startsWith('0x') })).optional() }),
      },
    },
    async (request) => ({ n: request.body.n }),
  );
  zApp.get('/__test/boom', { schema: { hide: true } }, async () => {
    throw new Error('password=hunter2 at /srv/secret.ts:42');
  });
  zApp.get('/__test/domain', { schema: { hide: true } }, async () => {
    throw new DomainError('INSUFFICIENT_POINTS', 'Only 3 points left.', { pointsRemaining: 3 });
  });
  zApp.get('/__test/queue-down', { schema: { hide: true } }, async () => {
    throw new DomainError(
      'QUEUE_UNAVAILABLE',
      undefined,
      undefined,
      new Error('CROSSSLOT Keys in request do not hash to the same slot'),
    );
  });
  zApp.get('/__test/bad-response', { schema: { hide: true, response: { 200: z.object({ n: z.number() }) } } }, async () => {
    return { n: 'not a number' } as unknown as { n: number };
  });
}

let t: TestApp;
const logs = new LogCapture();
let down: TestApp;

beforeAll(async () => {
  t = await startTestApp({ logs, env: { BODY_LIMIT_BYTES: '1024' }, extend: testRoutes });
  down = await startTestApp({ db: t.db, sql: createSql(UNREACHABLE_DATABASE_URL, { connectTimeout: 2 }) });
});
afterAll(async () => {
  await down.close();
  await t.close();
});

const post = (payload: string | Buffer, contentType = 'application/json') =>
  t.request({ method: 'POST', url: '/__test/echo', payload, headers: { 'content-type': contentType } });

function expectEnvelope(
  res: { statusCode: number; json(): unknown; headers: Record<string, unknown> },
  status: number,
  code: string,
) {
  expect(res.statusCode).toBe(status);
  const body = res.json() as Record<string, unknown>;
  expect(body).toMatchObject({ statusCode: status, code, requestId: res.headers['x-request-id'] });
  expect(typeof body.error).toBe('string');
  expect(typeof body.message).toBe('string');
  return body;
}

describe('error envelope', () => {
  it('answers 404 ROUTE_NOT_FOUND for unknown routes and methods', async () => {
    const body = expectEnvelope(await t.request({ method: 'GET', url: '/nope?x=1' }), 404, 'ROUTE_NOT_FOUND');
    expect(body).toEqual({
      statusCode: 404,
      error: 'Not Found',
      code: 'ROUTE_NOT_FOUND',
      message: 'No route GET /nope.',
      requestId: body.requestId,
    });
    expectEnvelope(await t.request({ method: 'DELETE', url: '/quests' }), 404, 'ROUTE_NOT_FOUND');
    expectEnvelope(await t.request({ method: 'PUT', url: '/campaigns/1' }), 404, 'ROUTE_NOT_FOUND');
  });

  it('answers 400 VALIDATION_FAILED for a URL that cannot be decoded', async () => {
    expectEnvelope(await t.request({ method: 'GET', url: '/quests/%E0%A4%A' }), 400, 'VALIDATION_FAILED');
  });

  it('answers 400 VALIDATION_FAILED with the zod issues and their paths for an invalid body', async () => {
    const body = expectEnvelope(await post(JSON.stringify({ n: 1.5, items: [{ address: 'nope' }] })), 400, 'VALIDATION_FAILED');
    expect(body.details).toEqual([
      { location: 'body', path: 'n', code: 'invalid_type', message: expect.any(String) },
      { location: 'body', path: 'items.0.address', code: 'invalid_format', message: expect.any(String) },
    ]);
    expect(body.message).toContain('body.n');
    expect(body.message).toContain('body.items.0.address');
    expectEnvelope(await post('[]'), 400, 'VALIDATION_FAILED');
    expectEnvelope(await post('"x"'), 400, 'VALIDATION_FAILED');
    // The hidden test route's 200 is not in the document, so this one goes around the contract check.
    const ok = await t.app.inject({ method: 'POST', url: '/__test/echo', payload: { n: 1 } });
    expect(ok.json()).toEqual({ n: 1 });
  });

  it('answers 400 VALIDATION_FAILED for malformed JSON, an empty JSON body and a poisoned prototype', async () => {
    const bad = expectEnvelope(await post('{"n": 1,'), 400, 'VALIDATION_FAILED');
    expect(bad.message).toBe('The body is not valid JSON.');
    const empty = expectEnvelope(await post(''), 400, 'VALIDATION_FAILED');
    expect(empty.message).toMatch(/empty/);
    expectEnvelope(await post('{"n":1,"__proto__":{"admin":true}}'), 400, 'VALIDATION_FAILED');
  });

  // The spec describes every client-side failure as 400 "bad request"; the code says which.
  it('answers 400 UNSUPPORTED_MEDIA_TYPE for a body that is not JSON, or has no content type', async () => {
    const body = expectEnvelope(await post('n=1', 'application/x-www-form-urlencoded'), 400, 'UNSUPPORTED_MEDIA_TYPE');
    expect(body.error).toBe('Bad Request');
    expectEnvelope(await post('<n>1</n>', 'application/xml'), 400, 'UNSUPPORTED_MEDIA_TYPE');
    expectEnvelope(await post('n=1', 'text/plain'), 400, 'UNSUPPORTED_MEDIA_TYPE');
    const untyped = await t.request({ method: 'POST', url: '/__test/echo', payload: '{"n":1}', headers: { 'content-type': '' } });
    expectEnvelope(untyped, 400, 'UNSUPPORTED_MEDIA_TYPE');
  });

  it('answers 400 PAYLOAD_TOO_LARGE beyond BODY_LIMIT_BYTES', async () => {
    const body = expectEnvelope(await post(JSON.stringify({ n: 1, pad: 'x'.repeat(2000) })), 400, 'PAYLOAD_TOO_LARGE');
    expect(body.error).toBe('Bad Request');
  });

  it('answers a DomainError with its own code, status, message and details', async () => {
    const body = expectEnvelope(await t.request({ method: 'GET', url: '/__test/domain' }), 400, 'INSUFFICIENT_POINTS');
    expect(body).toMatchObject({ message: 'Only 3 points left.', details: { pointsRemaining: 3 } });
  });

  it('answers 500 INTERNAL_ERROR with a generic message for a bug, and logs it with the request id', async () => {
    const res = await t.request({ method: 'GET', url: '/__test/boom', headers: { 'x-request-id': 'boom-1' } });
    const body = expectEnvelope(res, 500, 'INTERNAL_ERROR');
    expect(body).toEqual({
      statusCode: 500,
      error: 'Internal Server Error',
      code: 'INTERNAL_ERROR',
      message: 'Internal server error.',
      requestId: 'boom-1',
    });
    expect(res.body).not.toContain('hunter2');
    const logged = logs.lines.find((l) => l.reqId === 'boom-1' && l.level === 50);
    expect(logged).toBeDefined();
    expect(JSON.stringify(logged)).toContain('hunter2');
  });

  it('answers 500 INTERNAL_ERROR when a handler answers outside its response schema', async () => {
    const res = await t.request({ method: 'GET', url: '/__test/bad-response' });
    expectEnvelope(res, 500, 'INTERNAL_ERROR');
    expect(res.body).not.toContain('not a number');
  });

  it('answers 503 DATABASE_UNAVAILABLE with retry-after when PostgreSQL cannot be reached', async () => {
    for (const req of [
      { method: 'GET' as const, url: '/quests' },
      { method: 'GET' as const, url: '/campaigns/1' },
      { method: 'GET' as const, url: '/quests/1', headers: { 'x-api-key': `sk_${'a'.repeat(43)}` } },
    ]) {
      const res = await down.request(req);
      const body = expectEnvelope(res, 503, 'DATABASE_UNAVAILABLE');
      expect(body.message).toBe('The database is unavailable. Retry later.');
      expect(res.headers['retry-after']).toBe('1');
      expect(res.body).not.toContain('ECONNREFUSED');
    }
  });
});

describe('request ids', () => {
  it('honours a sane incoming x-request-id and echoes it, in the header and the error body', async () => {
    const res = await t.request({ method: 'GET', url: '/nope', headers: { 'x-request-id': 'abc-123_X.y:z' } });
    expect(res.headers['x-request-id']).toBe('abc-123_X.y:z');
    expect(res.json().requestId).toBe('abc-123_X.y:z');
  });

  it.each(['', ' ', 'a b', 'x'.repeat(129), 'ümlaut', 'a\tb', '<script>'])(
    'replaces the insane x-request-id %j',
    async (incoming) => {
      const res = await t.request({ method: 'GET', url: '/healthz', headers: { 'x-request-id': incoming } });
      expect(res.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    },
  );

  it('generates a fresh id per request when none is sent', async () => {
    const ids = new Set<string>();
    for (let i = 0; i < 5; i++) ids.add(String((await t.request({ method: 'GET', url: '/healthz' })).headers['x-request-id']));
    expect(ids.size).toBe(5);
  });

  it('puts the request id on successful responses too', async () => {
    const owner = await createOwner(t.sql);
    const id = await createQuest(t.sql, { ownerId: owner.id });
    const res = await t.request({
      method: 'GET',
      url: `/quests/${id}`,
      headers: { 'x-api-key': owner.apiKey, 'x-request-id': 'ok-1' },
    });
    expect(res.statusCode).toBe(200);
    expect(res.headers['x-request-id']).toBe('ok-1');
  });
});

describe('a 503 from a dependency', () => {
  it('answers the envelope without the cause, and logs the cause for operators', async () => {
    const res = await t.request({ method: 'GET', url: '/__test/queue-down' });
    const body = expectEnvelope(res, 503, 'QUEUE_UNAVAILABLE');
    expect(JSON.stringify(body)).not.toContain('CROSSSLOT');
    const line = logs.lines.find((l) => l.msg === 'request failed: dependency unavailable' && l.code === 'QUEUE_UNAVAILABLE');
    expect((line?.err as { message?: string } | undefined)?.message).toContain(
      ': CROSSSLOT Keys in request do not hash to the same slot',
    );
  });
});
