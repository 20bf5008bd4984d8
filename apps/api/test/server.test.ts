import { type ChildProcess, spawn } from 'node:child_process';
import { serviceArgs, test } from '@quest/testing';
import { describe, expect, vi } from 'vitest';
import { OpenApiContract } from './helpers.ts';

/** server.ts as tests start it elsewhere: its bundle while fresh, else through tsx (see serviceEntry). */
function startServer(env: Record<string, string>): { child: ChildProcess; output: () => string; exited: Promise<number | null> } {
  const child = spawn(process.execPath, serviceArgs('api'), {
    env: { PATH: process.env.PATH ?? '', ENV_FILE: '/dev/null', ...env },
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, output: () => out, exited };
}

describe('server.ts', () => {
  test('exits 1 with a readable message on bad configuration, before connecting to anything', async () => {
    const server = startServer({ PORT: 'abc', DATABASE_URL: 'mysql://nope' });
    expect(await server.exited).toBe(1);
    expect(server.output()).toContain('Invalid configuration');
    expect(server.output()).toContain('PORT');
    expect(server.output()).toContain('DATABASE_URL');
  });

  test('starts, serves, and shuts down gracefully on SIGTERM', async ({ database, redis }) => {
    const server = startServer({
      DATABASE_URL: database.url,
      REDIS_URL: redis.url,
      QUEUE_PREFIX: redis.prefix,
      QUEUE_PARTITIONS: '2',
      PORT: '0',
      LOG_LEVEL: 'info',
    });
    try {
      // Poll the output until the server says where it listens (startup includes tsx compiling).
      const address = await vi.waitFor(
        () => {
          const listening = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(server.output());
          if (!listening) throw new Error(`not listening yet; output so far:\n${server.output()}`);
          return listening[1]!;
        },
        { timeout: 30_000, interval: 50 },
      );
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
      expect((await get('/readyz')).json()).toEqual({ status: 'ok', checks: { database: 'ok', queue: 'ok' }, workers: 0 });
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
