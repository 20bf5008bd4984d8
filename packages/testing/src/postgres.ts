import { execFile } from 'node:child_process';
import { chownSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { onExitCleanup } from './exit.ts';
import { freePort } from './ports.ts';

/**
 * A PostgreSQL cluster of the caller's own (initdb in a temp dir, a free loopback port): for
 * faults (restarts, immediate stops) that must never touch the shared server, and for costs that
 * must count one run's work alone. Stopped by its postmaster's pid, also when the process exits.
 */

const run = promisify(execFile);
const PG_BIN = '/usr/lib/postgresql/15/bin';

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
  const root = mkdtempSync(join(tmpdir(), 'quest-pg-'));
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
