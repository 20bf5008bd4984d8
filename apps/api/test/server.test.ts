import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createTestDatabase, createTestRedis, type TestDatabase, type TestRedis } from '@quest/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OpenApiContract } from './helpers.ts';

const serverTs = fileURLToPath(new URL('../src/server.ts', import.meta.url));

function startServer(env: Record<string, string>): { child: ChildProcess; output: () => string; exited: Promise<number | null> } {
  const child = spawn(process.execPath, ['--import', 'tsx', serverTs], { env: { PATH: process.env.PATH ?? '', ...env } });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, output: () => out, exited };
}

async function waitFor(probe: () => string | undefined, timeoutMs: number): Promise<string> {
  const started = Date.now();
  while (Date.now() - started < timeoutMs) {
    const value = probe();
    if (value) return value;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('timed out');
}

let db: TestDatabase;
let redis: TestRedis;

beforeAll(async () => {
  [db, redis] = await Promise.all([createTestDatabase(), createTestRedis()]);
});
afterAll(async () => {
  await redis.cleanup();
  await db.drop();
});

describe('server.ts', () => {
  it('exits 1 with a readable message on bad configuration, before connecting to anything', async () => {
    const server = startServer({ PORT: 'abc', DATABASE_URL: 'mysql://nope' });
    expect(await server.exited).toBe(1);
    expect(server.output()).toContain('Invalid configuration');
    expect(server.output()).toContain('PORT');
    expect(server.output()).toContain('DATABASE_URL');
  });

  it('starts, serves, and shuts down gracefully on SIGTERM', async () => {
    const server = startServer({
      DATABASE_URL: db.url,
      REDIS_URL: redis.url,
      QUEUE_PREFIX: redis.prefix,
      QUEUE_PARTITIONS: '2',
      PORT: '0',
      LOG_LEVEL: 'info',
    });
    try {
      const address = await waitFor(() => /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(server.output())?.[1], 30_000);
      const docs = await fetch(`${address}/openapi.json`);
      const contract = OpenApiContract.fromDocument(await docs.json());
      expect(contract.doc.openapi).toBe('3.1.0');
      // Over real HTTP too, every answer matches the document.
      const get = async (path: string, headers: Record<string, string> = {}) => {
        const res = await fetch(`${address}${path}`, { headers });
        const body = await res.text();
        const checked = { statusCode: res.status, headers: Object.fromEntries(res.headers), body, json: () => JSON.parse(body) };
        contract.check('GET', path, checked);
        return checked;
      };
      expect((await get('/healthz')).json()).toEqual({ status: 'ok' });
      expect((await get('/readyz')).json()).toEqual({ status: 'ok', checks: { database: 'ok', queue: 'ok' } });
      expect((await get('/quests')).json()).toEqual([]);
      expect((await get('/quests/1', { 'x-api-key': `sk_${'a'.repeat(43)}` })).json().code).toBe('INVALID_API_KEY');
      expect((await get('/campaigns/1')).json().code).toBe('CAMPAIGN_NOT_FOUND');
      expect((await get('/nope', { 'x-request-id': 'srv-1' })).json()).toMatchObject({
        code: 'ROUTE_NOT_FOUND',
        requestId: 'srv-1',
      });
      server.child.kill('SIGTERM');
      expect(await server.exited).toBe(0);
      expect(server.output()).toContain('shutting down');
      expect(server.output()).toContain('"msg":"stopped"');
    } finally {
      server.child.kill('SIGKILL');
    }
  });
});
