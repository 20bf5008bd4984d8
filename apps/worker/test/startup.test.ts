import { spawn } from 'node:child_process';
import net from 'node:net';
import { describe, expect } from 'vitest';
import { REPO_ROOT, serviceArgs, test } from '@quest/testing';

/** Run the worker (its bundle while fresh, as tests start it elsewhere: see serviceEntry) until it exits by itself; everything it printed, and its exit code. */
function runWorker(env: Record<string, string>, until?: (out: string) => boolean) {
  const child = spawn(process.execPath, serviceArgs('worker'), {
    cwd: REPO_ROOT,
    env: { ...process.env, LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  const seen = new Promise<void>((resolve) => {
    const check = () => until?.(stdout + stderr) && resolve();
    child.stdout.on('data', (d) => {
      stdout += d;
      check();
    });
    child.stderr.on('data', (d) => {
      stderr += d;
      check();
    });
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, exited, seen, stdout: () => stdout, stderr: () => stderr };
}

describe('worker start-up', () => {
  test('a worker pointed at a missing database exits with one line naming the problem, and never joins', async ({
    database,
    redis,
  }) => {
    const missing = new URL(database.url);
    missing.pathname = '/quest_no_such_database';
    const run = runWorker({ DATABASE_URL: missing.toString(), REDIS_URL: redis.url, QUEUE_PREFIX: redis.prefix });
    expect(await run.exited).toBe(1);
    const lines = run.stderr().trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^quest-worker: DATABASE_URL .*quest_no_such_database.*: the database does not exist/);
    expect(run.stdout()).not.toContain('worker started');
  });

  test('a worker whose PostgreSQL is unreachable waits for it instead of exiting', async ({ database, redis }) => {
    // A port nobody listens on: connection refused, i.e. an outage, not a configuration error.
    const server = net.createServer();
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as net.AddressInfo).port;
    await new Promise<void>((r) => server.close(() => r()));
    const down = new URL(database.url);
    down.port = String(port);
    const run = runWorker(
      { DATABASE_URL: down.toString(), REDIS_URL: redis.url, QUEUE_PREFIX: redis.prefix },
      (out) => (out.match(/waiting for PostgreSQL/g) ?? []).length >= 3,
    );
    try {
      await Promise.race([run.seen, run.exited.then((code) => Promise.reject(new Error(`exited with ${code}`)))]);
      expect(run.child.exitCode).toBeNull();
    } finally {
      run.child.kill('SIGKILL');
      await run.exited;
    }
  });

  // The shared test server is a primary without standbys: what a single-node deployment looks like.
  test('a worker on a primary without a synchronous standby warns, and starts', async ({ database, redis }) => {
    const run = runWorker({ DATABASE_URL: database.url, REDIS_URL: redis.url, QUEUE_PREFIX: redis.prefix }, (out) =>
      out.includes('worker started'),
    );
    try {
      await Promise.race([run.seen, run.exited.then((code) => Promise.reject(new Error(`exited with ${code}`)))]);
      const warning = run
        .stdout()
        .split('\n')
        .find((l) => l.includes('without a synchronous standby'));
      expect(warning, run.stdout()).toBeDefined();
      expect(JSON.parse(warning!)).toMatchObject({
        level: 40,
        problems: [expect.stringMatching(/^synchronous_standby_names is empty/)],
      });
    } finally {
      run.child.kill('SIGKILL');
      await run.exited;
    }
  });

  test('with DATABASE_REQUIRE_SYNC_STANDBY=true the same worker refuses to start, saying why', async ({ database, redis }) => {
    const run = runWorker({
      DATABASE_URL: database.url,
      REDIS_URL: redis.url,
      QUEUE_PREFIX: redis.prefix,
      DATABASE_REQUIRE_SYNC_STANDBY: 'true',
    });
    expect(await run.exited).toBe(1);
    expect(run.stderr().trim()).toMatch(
      /^quest-worker: PostgreSQL primary without a synchronous standby: .*synchronous_standby_names is empty.*DATABASE_REQUIRE_SYNC_STANDBY=true\)$/,
    );
    expect(run.stdout()).not.toContain('worker started');
  });
});
