import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, vi } from 'vitest';
import { REPO_ROOT, serviceArgs, startWorker, test } from '@quest/testing';

/**
 * Run the healthcheck the way the container does: its bundle with plain node (the suite's global
 * setup builds it), or the TypeScript through tsx when a source is newer than the bundle. Through
 * tsx each call took about 0.9 s, and the waits below poll it.
 */
function healthcheck(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...serviceArgs('worker-healthcheck'), ...args], {
      cwd: REPO_ROOT,
      // No developer's .env, unless a test names one (the check reads it as the worker does).
      env: { PATH: process.env.PATH ?? '', ENV_FILE: '/dev/null', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, out }));
  });
}

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'quest-worker-health-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the worker healthcheck', () => {
  test('follows pool membership: healthy while renewing, unhealthy once frozen, healthy again, gone after SIGTERM', async ({
    database,
    redis,
  }) => {
    const file = join(dir, 'worker.health');
    const worker = await startWorker({
      DATABASE_URL: database.url,
      REDIS_URL: redis.url,
      QUEUE_PREFIX: redis.prefix,
      QUEUE_PARTITIONS: '2',
      WORKER_ID: 'health-w1',
      WORKER_HEARTBEAT_MS: '200',
      WORKER_MEMBER_TTL_MS: '1000',
      WORKER_HEALTH_FILE: file,
    });
    const pid = worker.child.pid!;
    try {
      const healthy = await vi.waitFor(
        async () => {
          const r = await healthcheck([], { WORKER_HEALTH_FILE: file });
          if (r.code !== 0) throw new Error(r.out);
          return r;
        },
        { timeout: 20_000, interval: 100 },
      );
      expect(healthy.out).toMatch(/^healthy: health-w1 renewed its pool membership \d+ ms ago \(1 members, partitions 0,1\)/);

      // A hung worker: its process is alive and its TCP connections are open, but it renews nothing.
      process.kill(pid, 'SIGSTOP');
      const hung = await vi.waitFor(
        async () => {
          const r = await healthcheck([file]);
          if (r.code === 0) throw new Error('still healthy');
          return r;
        },
        { timeout: 20_000, interval: 200 },
      );
      expect(hung.code).toBe(1);
      expect(hung.out).toMatch(/^unhealthy: pool membership of health-w1 last renewed \d+ ms ago \(limit 1000 ms\)/);

      process.kill(pid, 'SIGCONT');
      await vi.waitFor(
        async () => {
          const r = await healthcheck([file]);
          if (r.code !== 0) throw new Error(r.out);
        },
        { timeout: 20_000, interval: 100 },
      );

      expect(await worker.stop('SIGTERM')).toBe(0);
      expect(existsSync(file)).toBe(false);
      const gone = await healthcheck([file]);
      expect(gone.code).toBe(1);
      expect(gone.out).toContain('no liveness file');
    } finally {
      if (worker.child.exitCode === null && worker.child.signalCode === null) process.kill(pid, 'SIGCONT');
      await worker.stop('SIGKILL');
    }
  });

  test('reports usage errors with exit 2, and a stale file with exit 1 (explicit limit)', async () => {
    expect((await healthcheck([])).code).toBe(2);
    expect((await healthcheck(['--max-age-ms', 'soon', 'x'])).code).toBe(2);
    const file = join(dir, 'stale.health');
    writeFileSync(
      file,
      JSON.stringify({
        memberId: 'w9',
        pid: 1,
        renewedAt: new Date(Date.now() - 60_000).toISOString(),
        memberTtlMs: 120_000,
        members: 1,
        partitions: [],
      }),
    );
    expect((await healthcheck([file])).code).toBe(0);
    const limited = await healthcheck([file, '--max-age-ms', '30000']);
    expect(limited.code).toBe(1);
    expect(limited.out).toContain('(limit 30000 ms)');
  });

  test('finds WORKER_HEALTH_FILE in the .env file the worker reads, and reports a bad one as a usage error', async () => {
    const file = join(dir, 'from-env-file.health');
    const record = { memberId: 'w8', pid: 1, members: 1, partitions: [0], memberTtlMs: 120_000 };
    writeFileSync(file, JSON.stringify({ ...record, renewedAt: new Date().toISOString() }));
    const envFile = join(dir, 'worker.env');
    writeFileSync(envFile, `WORKER_HEALTH_FILE=${file}\n`);
    const viaEnvFile = await healthcheck([], { ENV_FILE: envFile });
    expect(viaEnvFile.code, viaEnvFile.out).toBe(0);
    expect(viaEnvFile.out).toMatch(/^healthy: w8 renewed/);

    const missing = await healthcheck([], { ENV_FILE: join(dir, 'no-such.env') });
    expect(missing.code).toBe(2);
    expect(missing.out).toMatch(/ENV_FILE: cannot read/);
  });
});
