import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { chownSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';

/**
 * Private PostgreSQL and Redis servers for the fault suite: each on a free loopback port in a temp
 * dir of its own, so faults (restarts, kill -9, FLUSHALL) never touch the shared servers. Everything
 * started here is registered in `cleanups` and stopped by pid when the process exits, also on failure.
 */

const run = promisify(execFile);
const PG_BIN = '/usr/lib/postgresql/15/bin';

/** Synchronous last-resort cleanups, run on exit (SIGINT/SIGTERM too): kill what we started, remove temp dirs. */
const cleanups = new Set<() => void>();
let exitHooked = false;
export function onExitCleanup(fn: () => void): () => void {
  if (!exitHooked) {
    exitHooked = true;
    process.on('exit', () => {
      for (const f of cleanups) {
        try {
          f();
        } catch {}
      }
    });
    for (const sig of ['SIGINT', 'SIGTERM'] as const) {
      process.once(sig, () => process.exit(130));
    }
  }
  cleanups.add(fn);
  return () => cleanups.delete(fn);
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

const isRoot = () => process.getuid?.() === 0;
/** PostgreSQL refuses to run as root: its commands run as the `postgres` user then. */
function pgCommand(bin: string, args: string[]): [string, string[]] {
  return isRoot() ? ['runuser', ['-u', 'postgres', '--', join(PG_BIN, bin), ...args]] : [join(PG_BIN, bin), args];
}
async function pg(bin: string, args: string[], timeoutMs = 60_000) {
  const [cmd, argv] = pgCommand(bin, args);
  return run(cmd, argv, { timeout: timeoutMs });
}

export interface PrivatePostgres {
  port: number;
  /** URL of database `name` on this cluster. */
  url(name: string): string;
  /** The postmaster's pid (from postmaster.pid), or undefined when it is not running. */
  pid(): number | undefined;
  restartFast(): Promise<void>;
  stopImmediate(): Promise<void>;
  start(): Promise<void>;
  stop(): Promise<void>;
}

export async function startPostgres(): Promise<PrivatePostgres> {
  const root = mkdtempSync(join(tmpdir(), 'quest-chaos-pg-'));
  if (isRoot()) {
    const { stdout } = await run('id', ['-u', 'postgres']);
    const { stdout: gid } = await run('id', ['-g', 'postgres']);
    chownSync(root, Number(stdout.trim()), Number(gid.trim()));
  }
  const data = join(root, 'data');
  const port = await freePort();
  const pidOf = (): number | undefined => {
    try {
      return Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
    } catch {
      return undefined;
    }
  };
  const unregister = onExitCleanup(() => {
    const pid = pidOf();
    if (pid) {
      try {
        process.kill(pid, 'SIGQUIT'); // immediate shutdown
      } catch {}
    }
    rmSync(root, { recursive: true, force: true });
  });
  await pg('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8', '--locale=C']);
  // fsync off: a stopped postmaster loses nothing while the OS keeps running, and the disk is shared.
  const opts = [
    `-p ${port}`,
    "-c listen_addresses='127.0.0.1'",
    `-c unix_socket_directories='${root}'`,
    '-c fsync=off',
    '-c full_page_writes=off',
    '-c max_connections=100',
    '-c shared_buffers=32MB',
  ].join(' ');
  const start = async () => {
    await pg('pg_ctl', ['start', '-D', data, '-w', '-t', '60', '-l', join(root, 'log'), '-o', opts]);
  };
  await start();
  return {
    port,
    url: (name) => `postgres://postgres@127.0.0.1:${port}/${name}`,
    pid: pidOf,
    restartFast: async () => {
      await pg('pg_ctl', ['restart', '-D', data, '-m', 'fast', '-w', '-t', '60', '-l', join(root, 'log'), '-o', opts]);
    },
    stopImmediate: async () => {
      await pg('pg_ctl', ['stop', '-D', data, '-m', 'immediate', '-w', '-t', '30']);
    },
    start,
    async stop() {
      if (pidOf()) await pg('pg_ctl', ['stop', '-D', data, '-m', 'immediate', '-w', '-t', '30']).catch(() => {});
      const left = pidOf();
      if (left) {
        try {
          process.kill(left, 'SIGKILL');
        } catch {}
      }
      rmSync(root, { recursive: true, force: true });
      unregister();
    },
  };
}

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

/** `persistence: 'aof'` = `--appendonly yes --appendfsync everysec`; `'none'` = no AOF, no RDB (a restart loses everything). */
export async function startRedis(persistence: 'aof' | 'none'): Promise<PrivateRedis> {
  const dir = mkdtempSync(join(tmpdir(), 'quest-chaos-redis-'));
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
    // Ready when it answers PING (bounded).
    const deadline = Date.now() + 20_000;
    for (;;) {
      const r = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      r.on('error', () => {});
      try {
        await r.connect();
        if ((await r.ping()) === 'PONG') return;
      } catch {
      } finally {
        r.disconnect();
      }
      if (Date.now() > deadline) throw new Error(`redis-server on ${port} did not answer within 20 s`);
      if (c.exitCode !== null) throw new Error(`redis-server on ${port} exited with ${c.exitCode}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  await start();
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
    async stop() {
      child?.kill('SIGKILL');
      await exited;
      rmSync(dir, { recursive: true, force: true });
      unregister();
    },
  };
}
