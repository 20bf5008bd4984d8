import { readFile } from 'node:fs/promises';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';

/**
 * The compose file and the Dockerfile cannot run on the development machine (no Docker engine),
 * so what docs/operations.md promises about them is checked here, statically.
 */

const read = (path: string) => readFile(new URL(`../../${path}`, import.meta.url), 'utf8');

interface Service {
  build?: unknown;
  profiles?: string[];
  image?: string;
  pull_policy?: string;
  command?: string[];
  environment?: Record<string, string>;
  stop_grace_period?: string;
  healthcheck?: { test?: string[]; disable?: boolean };
}

let services: Record<string, Service>;
let dockerfile: string;
let rootPackage: { packageManager: string; engines: { node: string } };

beforeAll(async () => {
  services = parse(await read('docker-compose.yml'), { merge: true }).services;
  dockerfile = await read('Dockerfile');
  rootPackage = JSON.parse(await read('package.json'));
});

const seconds = (duration: string) => {
  const m = /^(\d+)s$/.exec(duration);
  if (!m) throw new Error(`unexpected duration ${duration}`);
  return Number(m[1]);
};

describe('docker-compose.yml', () => {
  it('offers a three-master Redis Cluster behind the "cluster" profile, and passes REDIS_CLUSTER_NODES to the apps', () => {
    const cluster = Object.entries(services).filter(([, s]) => s.profiles?.includes('cluster'));
    expect(cluster.map(([name]) => name).sort()).toEqual(['redis-c1', 'redis-c2', 'redis-c3', 'redis-cluster-init']);
    for (const name of ['redis-c1', 'redis-c2', 'redis-c3']) {
      expect(services[name]!.command).toEqual(
        expect.arrayContaining(['--cluster-enabled', 'yes', '--maxmemory-policy', 'noeviction']),
      );
    }
    // Nothing else is in a profile but the backups' (its own test below): a plain `up` starts no cluster.
    expect(
      Object.entries(services).filter(([n, s]) => s.profiles && !s.profiles.includes('cluster') && n !== 'pgbackrest'),
    ).toEqual([]);
    for (const name of ['api', 'worker', 'migrate']) {
      // Compose's own interpolation syntax, kept literally in the file.
      expect(services[name]!.environment?.REDIS_CLUSTER_NODES).toBe(`$${'{'}REDIS_CLUSTER_NODES:-}`);
    }
  });

  it('archives WAL with pgBackRest only behind the "backup" profile, which builds PostgreSQL with it', () => {
    const pg = services.postgres!;
    expect(pg.command).toEqual(expect.arrayContaining(['archive_mode=$' + '{POSTGRES_ARCHIVE_MODE:-off}']));
    expect(pg.command).toContain('archive_command=pgbackrest --stanza=quest archive-push %p');
    const backup = services.pgbackrest!;
    expect(backup.profiles).toEqual(['backup']);
    expect(backup.build).toBe('ops/pgbackrest');
    expect(backup.image).toBe('quest-postgres:pgbackrest');
  });

  it('builds the application image once; every other service using it never pulls it', () => {
    const builders = Object.entries(services).filter(([n, s]) => s.build !== undefined && n !== 'pgbackrest');
    expect(builders.map(([name]) => name)).toEqual(['migrate']);
    const image = builders[0]![1].image!;
    expect(builders[0]![1].pull_policy).toBe('build');
    const users = Object.entries(services).filter(([name, s]) => s.image === image && name !== 'migrate');
    expect(users.map(([name]) => name).sort()).toEqual(['api', 'worker']);
    for (const [, s] of users) expect(s.pull_policy).toBe('never');
  });

  it('gives the worker a healthcheck on its pool membership, and a grace period beyond its shutdown timeout', () => {
    const worker = services.worker!;
    expect(worker.healthcheck?.test).toEqual(['CMD', 'node', 'apps/worker/dist/healthcheck.mjs']);
    expect(worker.environment?.WORKER_HEALTH_FILE).toMatch(/^\/tmp\//);
    const shutdownMs = Number(worker.environment?.SHUTDOWN_TIMEOUT_MS);
    expect(seconds(worker.stop_grace_period!)).toBeGreaterThanOrEqual(shutdownMs / 1000 + 5);
  });

  it('gives the API a grace period beyond its own shutdown bound (ALLOCATION_WAIT_MS + 10 s)', async () => {
    const api = services.api!;
    const allocationWaitMs = Number(api.environment?.ALLOCATION_WAIT_MS ?? 5000);
    expect(seconds(api.stop_grace_period!)).toBeGreaterThanOrEqual((allocationWaitMs + 10_000) / 1000 + 5);
    // quest-admin run in any app container reaches the API by its service name.
    expect(api.environment?.PORT).toBe('3000');
    for (const name of ['api', 'worker', 'migrate']) expect(services[name]!.environment?.API_BASE_URL).toBe('http://api:3000');
  });

  it('runs Redis with a memory limit, so that noeviction has something to act on', () => {
    const command = services.redis!.command!;
    const flag = (name: string) => command[command.indexOf(name) + 1];
    expect(flag('--maxmemory')).toMatch(/^\$\{REDIS_MAXMEMORY:-\d+[kmg]b\}$/);
    expect(flag('--maxmemory-policy')).toBe('noeviction');
    expect(flag('--appendonly')).toBe('yes');
  });
});

describe('Dockerfile', () => {
  it('runs the Node major of .nvmrc with the npm that packageManager names', async () => {
    const nvmrc = (await read('.nvmrc')).trim();
    const major = nvmrc.split('.')[0];
    const froms = [...dockerfile.matchAll(/^FROM (\S+)/gm)].map((m) => m[1]);
    expect(froms[0]).toBe(`node:${major}-bookworm-slim`);
    const npmVersion = rootPackage.packageManager.replace(/^npm@/, '');
    expect(dockerfile).toContain(`npm install --global npm@${npmVersion}`);
    expect(rootPackage.engines.node).toMatch(new RegExp(`^>=${major}\\.`));
  });

  it('installs only the deployable workspaces, without dev dependencies, and builds the healthcheck', async () => {
    expect(dockerfile).toMatch(
      /npm ci --omit=dev --ignore-scripts --workspace @quest\/api --workspace @quest\/worker --workspace @quest\/admin/,
    );
    // patch-package is a root dependency, not one of these workspaces': run explicitly, same version.
    const patchPackage = (rootPackage as unknown as { dependencies: Record<string, string> }).dependencies['patch-package'];
    expect(dockerfile).toContain(`npx --yes patch-package@${patchPackage}`);
    expect(await read('scripts/build.mjs')).toContain("out: 'apps/worker/dist/healthcheck.mjs'");
  });
});
