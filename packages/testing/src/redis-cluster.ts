import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';

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

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => resolve(typeof addr === 'object' && addr ? addr.port : 0));
    });
  });
}

async function until<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await new Promise((r) => setTimeout(r, 100));
  }
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
  const exitHook = () => {
    for (const p of ports) kill(p);
  };
  process.on('exit', exitHook);
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
    process.off('exit', exitHook);
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
    for (const port of ports) {
      await until(`redis-server on ${port}`, 20_000, async () => {
        const r = new Redis(port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
        r.on('error', () => {});
        try {
          await r.connect();
          return (await r.ping()) === 'PONG' ? true : undefined;
        } finally {
          r.disconnect();
        }
      });
    }
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
