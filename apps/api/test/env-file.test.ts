import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { partitionsKey } from '@quest/queue';
import { serviceArgs, test } from '@quest/testing';
import { Redis } from 'ioredis';
import { describe, expect, vi } from 'vitest';

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('server.ts and a .env file', () => {
  test('takes PORT, DATABASE_URL and REDIS_URL from the file; the real environment wins', async ({ database, redis }) => {
    const dir = mkdtempSync(join(tmpdir(), 'quest-api-env-'));
    const port = await freePort();
    const envFile = join(dir, '.env');
    writeFileSync(
      envFile,
      [
        `PORT=${port}`,
        `DATABASE_URL=${database.url}`,
        `REDIS_URL=${redis.url}`,
        'QUEUE_PREFIX=overridden-by-the-environment',
        'QUEUE_PARTITIONS=2',
        'LOG_LEVEL=info',
      ].join('\n'),
    );
    // server.ts as tests start it elsewhere: its bundle while fresh, else through tsx (see serviceEntry).
    const child = spawn(process.execPath, serviceArgs('api'), {
      env: { PATH: process.env.PATH ?? '', ENV_FILE: envFile, QUEUE_PREFIX: redis.prefix },
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      await vi.waitFor(
        () => {
          if (!out.includes(`Server listening at http://127.0.0.1:${port}`)) throw new Error(`not listening yet:\n${out}`);
        },
        { timeout: 30_000, interval: 50 },
      );
      expect(out).toContain(`"envFile":"${envFile}"`);
      const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
      expect(await ready.json()).toMatchObject({ status: 'ok', checks: { database: 'ok', queue: 'ok' } });
      // QUEUE_PREFIX came from the environment, not the file: the partition keys carry the test's prefix.
      const client = new Redis(redis.url);
      try {
        expect(await client.get(partitionsKey(redis.prefix))).toBe('2');
      } finally {
        client.disconnect();
      }
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    } finally {
      child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
