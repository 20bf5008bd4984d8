import { execFile } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { onExitCleanup } from './exit.ts';
import { freePort } from './ports.ts';
import { killNode as killTree } from './postgres.ts';

/**
 * A PostgreSQL cluster of the caller's own whose WAL pgBackRest archives (`archive_command =
 * pgbackrest archive-push`) into a repository on local disk, with base backups and restores run by
 * pgBackRest as an operator would: the restore drills and the RTO measurement. Everything lives in
 * one temp dir and is stopped by pid.
 */

const run = promisify(execFile);
const PG_BIN = '/usr/lib/postgresql/15/bin';
const PGBACKREST = '/usr/bin/pgbackrest';
export const STANZA = 'quest';

const isRoot = () => process.getuid?.() === 0;
const asPostgres = (cmd: string, args: string[]): [string, string[]] =>
  isRoot() ? ['runuser', ['-u', 'postgres', '--', cmd, ...args]] : [cmd, args];

/** Why pgBackRest cannot be used here, or undefined when it can. */
export function pgBackRestUnavailable(): string | undefined {
  if (!existsSync(PGBACKREST)) return `${PGBACKREST} is not installed (apt-get install pgbackrest; .ci/run installs it)`;
  if (!existsSync(join(PG_BIN, 'initdb'))) return `PostgreSQL 15 binaries are not in ${PG_BIN}`;
  return undefined;
}

interface Node {
  data: string;
  port: number;
  log: string;
  pid(): number | undefined;
}

export interface ArchivedPostgresOptions {
  /** `archive_timeout` in seconds: the longest a commit waits to be archived while nothing fills its segment. */
  archiveTimeoutS?: number;
  /** Extra server settings (`name=value`). */
  settings?: string[];
}

/** Where a restore stops: the end of the archive, or a time. */
export type RestoreTarget = { to: 'latest' } | { to: 'time'; time: Date };

export interface ArchivedPostgres {
  port: number;
  /** The pgBackRest configuration file; `pgbackrest --config=<it> --stanza=quest …`. */
  config: string;
  url(name: string): string;
  /** Run pgBackRest (as the `postgres` user) with this cluster's configuration and stanza; its stdout. */
  pgbackrest(args: string[], timeoutMs?: number): Promise<string>;
  /** A base backup taken while the cluster runs (`--start-fast`). */
  backup(type?: 'full' | 'diff' | 'incr'): Promise<void>;
  /** SIGKILL the primary's postmaster and its backends and remove its data directory: the disk is lost. */
  destroyPrimary(): Promise<void>;
  /** Stop the primary (fast shutdown; already stopped is fine). */
  stopPrimary(): Promise<void>;
  /**
   * Restore the primary's data directory from the repository (whatever is there is removed), start
   * it and wait until it has left recovery and takes writes. Returns the milliseconds the restore
   * took (pgBackRest restore + WAL replay + promotion).
   */
  restore(target: RestoreTarget): Promise<number>;
  stop(): Promise<void>;
}

async function makeRoot(): Promise<string> {
  const root = mkdtempSync(join(tmpdir(), 'quest-pgbr-'));
  if (isRoot()) {
    const uid = Number((await run('id', ['-u', 'postgres'])).stdout.trim());
    const gid = Number((await run('id', ['-g', 'postgres'])).stdout.trim());
    chownSync(root, uid, gid);
    for (const d of ['repo', 'log', 'lock']) {
      mkdirSync(join(root, d));
      chownSync(join(root, d), uid, gid);
    }
  } else for (const d of ['repo', 'log', 'lock']) mkdirSync(join(root, d));
  return root;
}

function makeNode(root: string, name: string, port: number): Node {
  const data = join(root, name);
  return {
    data,
    port,
    log: join(root, `${name}.log`),
    pid: () => {
      try {
        return Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
      } catch {
        return undefined;
      }
    },
  };
}

function killNode(node: Node): void {
  const pid = node.pid();
  if (!pid) return;
  try {
    process.kill(pid, 'SIGKILL');
  } catch {}
}

const pg = (bin: string, args: string[], timeoutMs = 120_000) => {
  const [cmd, argv] = asPostgres(join(PG_BIN, bin), args);
  return run(cmd, argv, { timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 });
};

const psql = async (port: number, root: string, query: string): Promise<string> =>
  (
    await pg('psql', ['-h', root, '-p', String(port), '-U', 'postgres', '-d', 'postgres', '-XAtq', '-c', query], 30_000)
  ).stdout.trim();

/** pgBackRest's configuration: one repository on local disk, full backups kept two at a time. */
function writeConfig(root: string, primary: Node): string {
  const config = join(root, 'pgbackrest.conf');
  writeFileSync(
    config,
    [
      '[global]',
      `repo1-path=${join(root, 'repo')}`,
      'repo1-retention-full=2',
      `log-path=${join(root, 'log')}`,
      `lock-path=${join(root, 'lock')}`,
      'log-level-console=warn',
      'log-level-file=info',
      'start-fast=y',
      'compress-type=lz4',
      'process-max=2',
      '',
      `[${STANZA}]`,
      `pg1-path=${primary.data}`,
      `pg1-port=${primary.port}`,
      `pg1-socket-path=${root}`,
      '',
    ].join('\n'),
    { mode: 0o644 },
  );
  return config;
}

/** A time as pgBackRest's --target and PostgreSQL's recovery_target_time take it: `2026-12-02 04:50:01.123+00`. */
export const pgTime = (t: Date) => `${t.toISOString().replace('T', ' ').replace('Z', '')}+00`;

export async function startArchivedPostgres(opts: ArchivedPostgresOptions = {}): Promise<ArchivedPostgres> {
  const root = await makeRoot();
  const primary = makeNode(root, 'data', await freePort());
  const unregister = onExitCleanup(() => {
    killNode(primary);
    rmSync(root, { recursive: true, force: true });
  });
  const config = writeConfig(root, primary);
  const pgbackrest = async (args: string[], timeoutMs = 300_000) => {
    const [cmd, argv] = asPostgres(PGBACKREST, [`--config=${config}`, `--stanza=${STANZA}`, ...args]);
    return (await run(cmd, argv, { timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 })).stdout;
  };
  const common = (node: Node) => [
    `-p ${node.port}`,
    "-c listen_addresses='127.0.0.1'",
    `-c unix_socket_directories='${root}'`,
    // The OS keeps running in every drill: fsync buys nothing, and the disk is shared.
    '-c fsync=off',
    '-c max_connections=100',
    '-c shared_buffers=64MB',
    '-c max_wal_senders=5',
    '-c wal_level=replica',
    '-c hot_standby=on',
  ];
  const primaryOptions = [
    ...common(primary),
    '-c archive_mode=on',
    `-c archive_command='${PGBACKREST} --config=${config} --stanza=${STANZA} archive-push %p'`,
    `-c archive_timeout=${opts.archiveTimeoutS ?? 60}`,
    ...(opts.settings ?? []).map((s) => `-c ${s}`),
  ].join(' ');
  const startNode = (node: Node, options: string) =>
    pg('pg_ctl', ['start', '-D', node.data, '-w', '-t', '600', '-l', node.log, '-o', options], 660_000);
  const waitPrimary = async () => {
    for (let i = 0; ; i++) {
      const inRecovery = await psql(primary.port, root, 'select pg_is_in_recovery()').catch(() => 't');
      if (inRecovery === 'f') return;
      if (i > 60_000 / 20) throw new Error(`the restored primary did not leave recovery: see ${primary.log}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  try {
    await pg('initdb', ['-D', primary.data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8', '--locale=C']);
    await startNode(primary, primaryOptions);
    await pgbackrest(['stanza-create']);
    await pgbackrest(['check']);
  } catch (err) {
    unregister();
    await killTree(primary);
    rmSync(root, { recursive: true, force: true });
    throw err;
  }
  /** The newest backup that ended before `time` (pgBackRest's own choice compares whole seconds). */
  const setBefore = async (time: Date) => {
    const [info] = JSON.parse(await pgbackrest(['info', '--output=json'])) as {
      backup: { label: string; timestamp: { stop: number } }[];
    }[];
    const set = info?.backup.filter((b) => b.timestamp.stop * 1000 < time.getTime() - 1000).at(-1);
    if (!set) throw new Error(`no backup ended before ${time.toISOString()}`);
    return set.label;
  };
  const stopPrimary = async () => {
    if (primary.pid())
      await pg('pg_ctl', ['stop', '-D', primary.data, '-m', 'fast', '-w', '-t', '60']).catch(() => killTree(primary));
  };
  return {
    port: primary.port,
    config,
    url: (name) => `postgres://postgres@127.0.0.1:${primary.port}/${name}`,
    pgbackrest,
    backup: async (type = 'full') => {
      await pgbackrest(['backup', `--type=${type}`]);
    },
    destroyPrimary: async () => {
      await killTree(primary);
      rmSync(primary.data, { recursive: true, force: true });
    },
    stopPrimary,
    restore: async (target) => {
      await stopPrimary();
      rmSync(primary.data, { recursive: true, force: true });
      const started = performance.now();
      const args = ['restore'];
      if (target.to === 'time')
        args.push(
          '--type=time',
          `--target=${pgTime(target.time)}`,
          '--target-action=promote',
          `--set=${await setBefore(target.time)}`,
        );
      await pgbackrest(args);
      await startNode(primary, primaryOptions);
      await waitPrimary();
      const ms = performance.now() - started;
      // The checkpointer chose its sleep while the server was in recovery, where archive_timeout
      // does not count: a checkpoint wakes it, so that segments are switched and archived again.
      await psql(primary.port, root, 'checkpoint');
      return ms;
    },
    async stop() {
      await killTree(primary);
      rmSync(root, { recursive: true, force: true });
      unregister();
    },
  };
}
