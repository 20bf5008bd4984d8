import { createSql } from '@quest/db';
import { createTestDatabase, type TestDatabase } from '@quest/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readOnlyAllocator, startTestApp, type TestApp, UNREACHABLE_DATABASE_URL } from './helpers.ts';

const queueDown = readOnlyAllocator(async () => {
  throw new Error('connect ECONNREFUSED 127.0.0.1:6379');
});

let db: TestDatabase;
let up: TestApp;
let dbDown: TestApp;
let redisDown: TestApp;
let bothDown: TestApp;
let queueHangs: TestApp;

beforeAll(async () => {
  // Five apps on one database: only their dependencies differ.
  db = await createTestDatabase({ max: 4 });
  const deadSql = () => createSql(UNREACHABLE_DATABASE_URL, { connectTimeout: 2 });
  [up, dbDown, redisDown, bothDown, queueHangs] = await Promise.all([
    startTestApp({ db }),
    startTestApp({ db, sql: deadSql() }),
    startTestApp({ db, allocator: queueDown }),
    startTestApp({ db, sql: deadSql(), allocator: queueDown }),
    startTestApp({ db, allocator: readOnlyAllocator(() => new Promise(() => {})) }),
  ]);
});
afterAll(async () => {
  await Promise.all([up, dbDown, redisDown, bothDown, queueHangs].map((t) => t.close()));
  await db.drop();
});

describe('GET /healthz', () => {
  it('answers 200 {status: "ok"} while the process is up, whatever its dependencies do', async () => {
    for (const t of [up, dbDown, bothDown]) {
      const res = await t.request({ method: 'GET', url: '/healthz' });
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({ status: 'ok' });
    }
  });
});

describe('GET /readyz', () => {
  it('answers 200 when PostgreSQL and the queue both answer', async () => {
    const res = await up.request({ method: 'GET', url: '/readyz' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: 'ok', checks: { database: 'ok', queue: 'ok' }, workers: 0 });
  });

  it('answers 503 DATABASE_UNAVAILABLE, naming the database, when PostgreSQL is unreachable', async () => {
    const res = await dbDown.request({ method: 'GET', url: '/readyz' });
    expect(res.statusCode).toBe(503);
    expect(res.json()).toEqual({
      statusCode: 503,
      error: 'Service Unavailable',
      code: 'DATABASE_UNAVAILABLE',
      message: 'Not ready: database unavailable.',
      requestId: res.headers['x-request-id'],
      details: { checks: { database: 'unavailable', queue: 'ok' } },
    });
  });

  it('answers 503 QUEUE_UNAVAILABLE, naming the queue, when the allocator ping rejects', async () => {
    const res = await redisDown.request({ method: 'GET', url: '/readyz' });
    expect(res.statusCode).toBe(503);
    expect(res.json()).toMatchObject({
      code: 'QUEUE_UNAVAILABLE',
      message: 'Not ready: queue unavailable.',
      details: { checks: { database: 'ok', queue: 'unavailable' } },
    });
    expect(res.body).not.toContain('ECONNREFUSED');
  });

  it('names both when both are down', async () => {
    const res = await bothDown.request({ method: 'GET', url: '/readyz' });
    expect(res.statusCode).toBe(503);
    expect(res.json()).toMatchObject({
      code: 'DATABASE_UNAVAILABLE',
      message: 'Not ready: database and queue unavailable.',
      details: { checks: { database: 'unavailable', queue: 'unavailable' } },
    });
  });

  it('answers 503 within its probe timeout when a dependency hangs', async () => {
    // A contract bound, not a speed target: readiness must answer (503) rather than hang with a hung
    // dependency, within the probe timeout (CHECK_TIMEOUT_MS in src/routes/health.ts) plus a generous
    // margin for a loaded machine. Measured from the request, on the monotonic clock.
    const PROBE_TIMEOUT_MS = 2000;
    const MARGIN_MS = 3000;
    const sent = performance.now();
    const res = await queueHangs.request({ method: 'GET', url: '/readyz' });
    const answeredAfterMs = performance.now() - sent;
    expect(res.statusCode).toBe(503);
    expect(res.json().details).toEqual({ checks: { database: 'ok', queue: 'unavailable' } });
    expect(answeredAfterMs).toBeLessThan(PROBE_TIMEOUT_MS + MARGIN_MS);
  });
});
