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

interface Node {
  root: string;
  data: string;
  port: number;
  log: string;
  pid(): number | undefined;
}

async function makeRoot(): Promise<string> {
  const root = mkdtempSync(join(tmpdir(), 'quest-pg-'));
  if (isRoot()) {
    const { stdout } = await run('id', ['-u', 'postgres']);
    const { stdout: gid } = await run('id', ['-g', 'postgres']);
    chownSync(root, Number(stdout.trim()), Number(gid.trim()));
  }
  return root;
}

async function makeNode(): Promise<Node> {
  const root = await makeRoot();
  const data = join(root, 'data');
  return {
    root,
    data,
    port: await freePort(),
    log: join(root, 'log'),
    pid: () => {
      try {
        return Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
      } catch {
        return undefined;
      }
    },
  };
}

/** Immediate shutdown of a node's postmaster (its backends follow), then its directory removed. */
function cleanupNode(node: Node): () => void {
  return () => {
    const pid = node.pid();
    if (pid) {
      try {
        process.kill(pid, 'SIGQUIT');
      } catch {}
    }
    rmSync(node.root, { recursive: true, force: true });
  };
}

// fsync off: a stopped postmaster loses nothing while the OS keeps running, and the disk is shared.
const serverOptions = (node: Node, extra: string[] = []) =>
  [
    `-p ${node.port}`,
    "-c listen_addresses='127.0.0.1'",
    `-c unix_socket_directories='${node.root}'`,
    '-c fsync=off',
    '-c full_page_writes=off',
    '-c max_connections=100',
    '-c shared_buffers=32MB',
    ...extra,
  ].join(' ');

const pgCtlStart = (node: Node, opts: string) =>
  pg('pg_ctl', ['start', '-D', node.data, '-w', '-t', '60', '-l', node.log, '-o', opts]);

async function stopNode(node: Node): Promise<void> {
  if (node.pid()) await pg('pg_ctl', ['stop', '-D', node.data, '-m', 'immediate', '-w', '-t', '30']).catch(() => {});
  const left = node.pid();
  if (left) {
    try {
      process.kill(left, 'SIGKILL');
    } catch {}
  }
  rmSync(node.root, { recursive: true, force: true });
}

/** SIGKILL a postmaster and every process it started, at once: the machine is gone, not shutting down. */
export async function killNode(node: Pick<Node, 'pid'>): Promise<void> {
  const pid = node.pid();
  if (!pid) return;
  const { stdout } = await run('ps', ['-o', 'pid=', '--ppid', String(pid)]).catch(() => ({ stdout: '' }));
  for (const p of [
    pid,
    ...stdout
      .split('\n')
      .map(Number)
      .filter((n) => n > 0),
  ]) {
    try {
      process.kill(p, 'SIGKILL');
    } catch {}
  }
  // A SIGKILLed postmaster leaves its pid file behind: wait until the process is gone.
  for (let i = 0; i < 500; i++) {
    try {
      process.kill(pid, 0);
    } catch {
      return;
    }
    await new Promise((r) => setTimeout(r, 10));
  }
}

export async function startPostgres(): Promise<PrivatePostgres> {
  const node = await makeNode();
  const unregister = onExitCleanup(cleanupNode(node));
  await pg('initdb', ['-D', node.data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8', '--locale=C']);
  const opts = serverOptions(node);
  const start = async () => {
    await pgCtlStart(node, opts);
  };
  await start();
  return {
    port: node.port,
    url: (name) => `postgres://postgres@127.0.0.1:${node.port}/${name}`,
    pid: node.pid,
    restartFast: async () => {
      await pg('pg_ctl', ['restart', '-D', node.data, '-m', 'fast', '-w', '-t', '60', '-l', node.log, '-o', opts]);
    },
    stopImmediate: async () => {
      await pg('pg_ctl', ['stop', '-D', node.data, '-m', 'immediate', '-w', '-t', '30']);
    },
    start,
    async stop() {
      await stopNode(node);
      unregister();
    },
  };
}

/**
 * A primary and a streaming standby of its own (`pg_basebackup -R`), each on a free port: the
 * failover faults. With `synchronous: true` (the default) the primary names the standby in
 * `synchronous_standby_names`, so a commit returns only once the standby has it (`synchronous_commit
 * = on`); the standby itself names none, so once promoted it takes writes alone (as Patroni and
 * pg_auto_failover let a primary without a live standby do). With `asyncStandby: true` a second,
 * asynchronous standby is listed between them in `url()`; it is never promoted and, like a standby
 * whose failover manager has not re-pointed it yet, stays in recovery after the primary is lost.
 */
export interface PrivatePostgresPair {
  primaryPort: number;
  standbyPort: number;
  asyncStandbyPort: number | undefined;
  /** Multi-host URL of database `name`: every node, `target_session_attrs=read-write`. */
  url(name: string): string;
  /** URL of database `name` on one node. */
  nodeUrl(node: 'primary' | 'standby' | 'async', name: string): string;
  /** SIGKILL the primary's postmaster and all its processes (a lost machine). */
  killPrimary(): Promise<void>;
  /** `pg_ctl promote -w` the (synchronous) standby: it leaves recovery and takes writes. */
  promoteStandby(): Promise<void>;
  stop(): Promise<void>;
}

/** The walreceiver's application_name: `cluster_name` when primary_conninfo names none. */
const STANDBY_NAME = 'quest_standby';

export async function startPostgresPair(
  opts: { synchronous?: boolean; asyncStandby?: boolean } = {},
): Promise<PrivatePostgresPair> {
  const synchronous = opts.synchronous ?? true;
  const primary = await makeNode();
  const standby = await makeNode();
  const async = opts.asyncStandby ? await makeNode() : undefined;
  const nodes = [primary, standby, ...(async ? [async] : [])];
  const unregister = nodes.map((n) => onExitCleanup(cleanupNode(n)));
  const startStandby = async (node: Node, name: string) => {
    // -R writes standby.signal and primary_conninfo; -X stream copies the WAL written meanwhile.
    await pg(
      'pg_basebackup',
      ['-h', '127.0.0.1', '-p', String(primary.port), '-U', 'postgres', '-D', node.data, '-R', '-X', 'stream', '--no-sync'],
      120_000,
    );
    await pgCtlStart(
      node,
      serverOptions(node, [
        `-c cluster_name=${name}`,
        "-c synchronous_standby_names=''",
        '-c hot_standby=on',
        '-c wal_receiver_status_interval=1s',
      ]),
    );
  };
  try {
    await pg('initdb', ['-D', primary.data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8', '--locale=C']);
    await pgCtlStart(
      primary,
      serverOptions(primary, [
        '-c wal_level=replica',
        '-c max_wal_senders=5',
        `-c synchronous_standby_names='${synchronous ? STANDBY_NAME : ''}'`,
        '-c synchronous_commit=on',
        '-c wal_sender_timeout=5s',
        // Two base backups at once: each one's checkpoint must not recycle WAL the other still streams.
        '-c wal_keep_size=256MB',
      ]),
    );
    await Promise.all([startStandby(standby, STANDBY_NAME), ...(async ? [startStandby(async, 'quest_async')] : [])]);
  } catch (err) {
    await Promise.all(nodes.map(stopNode));
    for (const u of unregister) u();
    throw err;
  }
  const nodeUrl = (node: 'primary' | 'standby' | 'async', name: string) => {
    const n = node === 'primary' ? primary : node === 'standby' ? standby : async;
    if (!n) throw new Error('no asynchronous standby: start the pair with asyncStandby: true');
    return `postgres://postgres@127.0.0.1:${n.port}/${name}`;
  };
  // The async standby between the two: a connection that loses the primary meets it first.
  const hosts = [primary, ...(async ? [async] : []), standby].map((n) => `127.0.0.1:${n.port}`).join(',');
  return {
    primaryPort: primary.port,
    standbyPort: standby.port,
    asyncStandbyPort: async?.port,
    url: (name) => `postgres://postgres@${hosts}/${name}?target_session_attrs=read-write`,
    nodeUrl,
    killPrimary: () => killNode(primary),
    promoteStandby: async () => {
      await pg('pg_ctl', ['promote', '-D', standby.data, '-w', '-t', '60']);
    },
    async stop() {
      await Promise.all(nodes.map(stopNode));
      for (const u of unregister) u();
    },
  };
}
