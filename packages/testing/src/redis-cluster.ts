import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { onExitCleanup } from './exit.ts';
import { freePort } from './ports.ts';
import { waitForPing } from './redis.ts';
import { until } from './wait.ts';

const run = promisify(execFile);

/**
 * A Redis Cluster of the test's own: `masters` (+ `replicas` per master) redis-server processes
 * with --cluster-enabled on free loopback ports, in a temp dir, joined with
 * `redis-cli --cluster create`. Stopped by pid (never the shared Redis on 6379).
 */
export interface TestRedisCluster {
  /** `host:port,…` of every node, for REDIS_CLUSTER_NODES. */
  nodes: string;
  ports: number[];
  /** Ports of the nodes that are masters now (asked from the cluster). */
  masterPorts(): Promise<number[]>;
  /** A plain connection to one node (commands on its own keys only). */
  node(port: number): Redis;
  /** SIGKILL one node. */
  kill(port: number): Promise<void>;
  stop(): Promise<void>;
}

export async function startRedisCluster(opts: { masters?: number; replicas?: number } = {}): Promise<TestRedisCluster> {
  const masters = opts.masters ?? 3;
  const replicas = opts.replicas ?? 0;
  const dir = mkdtempSync(join(tmpdir(), 'quest-redis-cluster-'));
  const count = masters * (1 + replicas);
  const ports: number[] = [];
  // Cluster bus ports are port + 10000: pick ports whose bus port is free too.
  while (ports.length < count) {
    const p = await freePort();
    if (p + 10_000 < 65_536 && !ports.includes(p)) ports.push(p);
  }
  const children = new Map<number, ChildProcess>();
  const kill = (port: number) => {
    const c = children.get(port);
    if (c?.pid && c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  };
  const unregister = onExitCleanup(() => {
    for (const p of ports) kill(p);
  });
  const connections: Redis[] = [];
  const stop = async () => {
    for (const c of connections) c.disconnect();
    await Promise.all(
      ports.map(async (p) => {
        const c = children.get(p);
        if (!c || c.exitCode !== null || c.signalCode !== null) return;
        const exited = new Promise((r) => c.once('exit', r));
        c.kill('SIGKILL');
        await exited;
      }),
    );
    unregister();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (const port of ports) {
      const child = spawn(
        'redis-server',
        [
          '--port',
          String(port),
          '--bind',
          '127.0.0.1',
          '--cluster-enabled',
          'yes',
          '--cluster-config-file',
          `nodes-${port}.conf`,
          '--cluster-node-timeout',
          '2000',
          '--dir',
          dir,
          '--save',
          '',
          '--appendonly',
          'no',
          '--maxmemory-policy',
          'noeviction',
        ],
        { stdio: 'ignore' },
      );
      children.set(port, child);
    }
    for (const port of ports) await waitForPing(port, children.get(port)!);
    await run(
      'redis-cli',
      ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', String(replicas), '--cluster-yes'],
      { timeout: 60_000 },
    );
    // Every node agrees the cluster is up and knows all nodes.
    for (const port of ports) {
      await until(`cluster_state:ok on ${port}`, 30_000, async () => {
        const { stdout } = await run('redis-cli', ['-p', String(port), 'cluster', 'info']);
        return stdout.includes('cluster_state:ok') && stdout.includes(`cluster_known_nodes:${count}`) ? true : undefined;
      });
    }
  } catch (error) {
    await stop();
    throw error;
  }

  return {
    nodes: ports.map((p) => `127.0.0.1:${p}`).join(','),
    ports,
    async masterPorts() {
      for (const p of ports) {
        const c = children.get(p);
        if (!c || c.exitCode !== null || c.signalCode !== null) continue;
        const { stdout } = await run('redis-cli', ['-p', String(p), 'cluster', 'nodes']);
        return stdout
          .split('\n')
          .filter((l) => / master /.test(` ${l.split(' ')[2]?.replace(/,/g, ' ')} `) && !l.includes('fail'))
          .map((l) => Number(/:(\d+)@/.exec(l)?.[1]))
          .filter((n) => n > 0)
          .sort((a, b) => a - b);
      }
      return [];
    },
    node(port) {
      const c = new Redis(port, '127.0.0.1', { maxRetriesPerRequest: 1 });
      c.on('error', () => {});
      connections.push(c);
      return c;
    },
    async kill(port) {
      const c = children.get(port);
      if (!c || c.exitCode !== null || c.signalCode !== null) return;
      const exited = new Promise((r) => c.once('exit', r));
      c.kill('SIGKILL');
      await exited;
    },
    stop,
  };
}
