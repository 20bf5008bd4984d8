import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { onExitCleanup } from './exit.ts';
import { freePort } from './ports.ts';
import { until } from './wait.ts';

/**
 * A redis-server of the caller's own, on a free loopback port in a temp dir: for faults (kill -9,
 * FLUSHALL, restarts) that must never touch the shared Redis, and for counters (INFO cpu,
 * commandstats) that must count one run's work alone. Stopped by pid, also when the process exits.
 */
export interface PrivateRedis {
  port: number;
  url: string;
  pid(): number | undefined;
  /** SIGKILL the server (no save) and wait for it to exit. */
  kill9(): Promise<void>;
  /** Start it again on the same port and dir (reading its AOF when it persists). */
  start(): Promise<void>;
  flushAll(): Promise<void>;
  stop(): Promise<void>;
}

/** Wait (up to `timeoutMs`) until the redis-server on `port` answers PING; fail early when `child` exits. */
export async function waitForPing(port: number, child: ChildProcess, timeoutMs = 20_000): Promise<void> {
  await until(
    `redis-server on ${port} to answer PING`,
    timeoutMs,
    async () => {
      const r = new Redis(port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      r.on('error', () => {});
      try {
        await r.connect();
        return (await r.ping()) === 'PONG' ? true : undefined;
      } finally {
        r.disconnect();
      }
    },
    { intervalMs: 50, process: { child, name: `redis-server on ${port}` } },
  );
}

/** `persistence: 'aof'` = `--appendonly yes --appendfsync everysec`; `'none'` = no AOF, no RDB (a restart loses everything). */
export async function startRedis(persistence: 'aof' | 'none'): Promise<PrivateRedis> {
  const dir = mkdtempSync(join(tmpdir(), 'quest-redis-'));
  const port = await freePort();
  const url = `redis://127.0.0.1:${port}`;
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  const unregister = onExitCleanup(() => {
    if (child?.pid && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });
  const persist =
    persistence === 'aof' ? ['--appendonly', 'yes', '--appendfsync', 'everysec'] : ['--save', '', '--appendonly', 'no'];
  const start = async () => {
    child = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--maxmemory-policy', 'noeviction', ...persist],
      { stdio: 'ignore' },
    );
    const c = child;
    exited = new Promise((resolve) => c.once('exit', () => resolve()));
    await waitForPing(port, c);
  };
  const stop = async () => {
    child?.kill('SIGKILL');
    await exited;
    rmSync(dir, { recursive: true, force: true });
    unregister();
  };
  try {
    await start();
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    port,
    url,
    pid: () => (child && child.exitCode === null && child.signalCode === null ? child.pid : undefined),
    async kill9() {
      child?.kill('SIGKILL');
      await exited;
    },
    start,
    async flushAll() {
      const r = new Redis(url, { maxRetriesPerRequest: 1 });
      try {
        await r.flushall();
      } finally {
        r.disconnect();
      }
    },
    stop,
  };
}
