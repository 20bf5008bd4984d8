import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleIsFresh } from '@quest/config/fresh';
import { freePort } from './ports.ts';
import { until } from './wait.ts';

export const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/** The service's entry points, relative to REPO_ROOT: TypeScript sources, run through tsx. */
export const ENTRIES = {
  api: 'apps/api/src/server.ts',
  worker: 'apps/worker/src/main.ts',
  /** quest-admin's launcher (the TypeScript through tsx unless apps/admin/dist is fresh). */
  admin: 'apps/admin/bin/quest-admin.js',
} as const;

export interface ServiceProcess {
  child: ChildProcess;
  pid: number;
  /** What the process printed so far (all of it, or the last `keepOutput` characters). */
  output(): string;
  /** Lines printed so far that look like pino warn/error/fatal records (level ≥ 40), or are not JSON. */
  problems(): string[];
  /** SIGTERM (or the given signal) and wait for exit; SIGKILL when it takes longer than `killAfterMs`. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
  exited: Promise<number | null>;
}

export interface SpawnOptions {
  /** node flags before the entry (e.g. --cpu-prof: Node refuses it in NODE_OPTIONS). */
  nodeArgs?: string[];
  /** Keep only the last this many characters of output (a long run's logs); default: all. */
  keepOutput?: number;
  /** How long stop() waits after its signal before SIGKILL; default 30 s. */
  killAfterMs?: number;
}

/** Where `npm run build` (scripts/build.mjs) bundles each service, relative to REPO_ROOT. */
const BUNDLES = {
  api: 'apps/api/dist/server.mjs',
  worker: 'apps/worker/dist/main.mjs',
  /** The worker container's healthcheck (apps/worker/src/healthcheck.ts). */
  'worker-healthcheck': 'apps/worker/dist/healthcheck.mjs',
} as const;
const SOURCES = { api: ENTRIES.api, worker: ENTRIES.worker, 'worker-healthcheck': 'apps/worker/src/healthcheck.ts' } as const;

/**
 * The entry a test starts for a service: its bundle when one exists that no source of the app or
 * of a workspace package is newer than (the rule quest-admin's launcher follows), else the
 * TypeScript through tsx. The suite's global setup (tests/global-setup.ts) bundles once before the
 * first file, so each of the suite's few hundred process starts skips tsx's run-time transpiling
 * (measured: about 0.9 s of CPU each) and runs what production runs; an edited checkout never
 * runs stale code, because an edit makes the bundle stale.
 */
export function serviceEntry(app: keyof typeof BUNDLES): string {
  // The app's sources: the directory of its entry (apps/<app>/src).
  const dirs = [join(REPO_ROOT, dirname(SOURCES[app]))];
  for (const p of readdirSync(join(REPO_ROOT, 'packages'))) dirs.push(join(REPO_ROOT, 'packages', p, 'src'));
  return bundleIsFresh(join(REPO_ROOT, BUNDLES[app]), dirs) ? BUNDLES[app] : SOURCES[app];
}

/**
 * node's arguments to run a service's entry (see serviceEntry), for a test that spawns it itself:
 * the bundle with plain node, else the TypeScript through tsx. The path is absolute.
 */
export function serviceArgs(app: keyof typeof BUNDLES): string[] {
  const entry = serviceEntry(app);
  return [...(/\.(mjs|js)$/.test(entry) ? [] : ['--import', 'tsx']), join(REPO_ROOT, entry)];
}

const MAX_PROBLEMS = 200;

/**
 * Run an entry point of this repo as a real OS process with `env` on top of this process's
 * environment. TypeScript runs through tsx; a built bundle (.mjs/.js) runs with plain node, as in
 * production. Does not wait for anything: see startProcess and startHttpProcess.
 */
export function spawnProcess(entry: string, env: Record<string, string>, opts: SpawnOptions = {}): ServiceProcess {
  const loader = /\.(mjs|js)$/.test(entry) ? [] : ['--import', 'tsx'];
  const child = spawn(process.execPath, [...(opts.nodeArgs ?? []), ...loader, entry], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let partial = '';
  const problems: string[] = [];
  const onData = (d: Buffer) => {
    const s = d.toString();
    out += s;
    if (opts.keepOutput !== undefined && out.length > opts.keepOutput) out = out.slice(-opts.keepOutput);
    partial += s;
    const lines = partial.split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) {
      const m = /"level":(\d+)/.exec(line);
      if ((m && Number(m[1]) >= 40) || (!m && line.trim() && !line.startsWith('{'))) {
        if (problems.length < MAX_PROBLEMS) problems.push(line.slice(0, 2000));
      }
    }
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code, signal) => resolve(code ?? (signal ? -1 : null))),
  );
  return {
    child,
    pid: child.pid ?? -1,
    exited,
    output: () => out,
    problems: () => problems,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode !== null || child.signalCode !== null) return exited;
      child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), opts.killAfterMs ?? 30_000);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}

/**
 * Start an entry point (e.g. 'apps/worker/src/main.ts') with the given environment and wait until
 * it prints `readyText`. LOG_LEVEL=info unless `env` says otherwise (the ready lines are info), and
 * ENV_FILE=/dev/null: a developer's .env must not change what a test configured.
 */
export async function startProcess(
  entry: string,
  env: Record<string, string>,
  readyText: string | RegExp,
  timeoutMs = 30_000,
  opts: SpawnOptions = {},
): Promise<ServiceProcess> {
  const proc = spawnProcess(entry, { LOG_LEVEL: 'info', ENV_FILE: '/dev/null', ...env }, opts);
  const { child } = proc;
  await new Promise<void>((resolve, reject) => {
    const matches = () => (typeof readyText === 'string' ? proc.output().includes(readyText) : readyText.test(proc.output()));
    const timer = setTimeout(() => {
      cleanup();
      child.kill('SIGKILL');
      reject(new Error(`${entry} did not become ready in ${timeoutMs} ms:\n${proc.output()}`));
    }, timeoutMs);
    const onData = () => {
      if (matches()) {
        cleanup();
        resolve();
      }
    };
    const onExit = (code: number | null) => {
      cleanup();
      reject(new Error(`${entry} exited with ${code} before becoming ready:\n${proc.output()}`));
    };
    const cleanup = () => {
      clearTimeout(timer);
      child.stdout!.off('data', onData);
      child.stderr!.off('data', onData);
      child.off('exit', onExit);
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', onExit);
    onData();
  });
  return proc;
}

/** A worker process (see serviceEntry), ready when it logs "worker started". */
export function startWorker(env: Record<string, string>, timeoutMs = 30_000): Promise<ServiceProcess> {
  return startProcess(serviceEntry('worker'), env, '"worker started"', timeoutMs);
}

const LISTENING = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/;

/**
 * Start the API with `env` (on a free port, unless `env.PORT` names one); resolves with the process
 * and its base URL once it logs that it listens. `entry`: default serviceEntry('api').
 */
export async function startApiProcess(
  env: Record<string, string>,
  entry: string = serviceEntry('api'),
  timeoutMs = 30_000,
): Promise<{ process: ServiceProcess; baseUrl: string }> {
  const api = await startProcess(entry, { PORT: '0', ...env }, LISTENING, timeoutMs);
  return { process: api, baseUrl: LISTENING.exec(api.output())![1]! };
}

/**
 * Start an HTTP entry (the API, or another service with GET /readyz) on a free loopback port and
 * wait (up to 60 s) until /readyz answers 200. For processes that print no ready line at their log
 * level (LOG_LEVEL=warn): readiness is observed from outside.
 */
export async function startHttpProcess(
  entry: string,
  env: Record<string, string>,
  opts: SpawnOptions & { name?: string } = {},
): Promise<ServiceProcess & { baseUrl: string }> {
  const port = await freePort();
  const proc = spawnProcess(entry, { ...env, HOST: '127.0.0.1', PORT: String(port) }, opts);
  const baseUrl = `http://127.0.0.1:${port}`;
  try {
    await until(
      `${opts.name ?? entry} readiness (GET /readyz)`,
      60_000,
      async () => {
        const res = await fetch(`${baseUrl}/readyz`, { signal: AbortSignal.timeout(2000) });
        await res.arrayBuffer();
        return res.status === 200 ? true : undefined;
      },
      { process: { ...proc, name: opts.name ?? entry } },
    );
  } catch (error) {
    await proc.stop('SIGKILL');
    throw error;
  }
  return Object.assign(proc, { baseUrl });
}
