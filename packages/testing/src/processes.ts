import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));

export interface ServiceProcess {
  child: ChildProcess;
  /** Everything the process printed so far. */
  output(): string;
  /** SIGTERM (or the given signal) and wait for exit. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
  exited: Promise<number | null>;
}

/**
 * Start a TypeScript entry point of this repo (e.g. 'apps/worker/src/main.ts') as a real OS process
 * with the given environment, and wait until it prints `readyText`.
 */
export async function startProcess(
  entry: string,
  env: Record<string, string>,
  readyText: string | RegExp,
  timeoutMs = 30_000,
): Promise<ServiceProcess> {
  // TypeScript runs through tsx; a built bundle (.mjs/.js) runs with plain node, as in production.
  const args = /\.(mjs|js)$/.test(entry) ? [entry] : ['--import', 'tsx', entry];
  const child = spawn(process.execPath, args, {
    cwd: REPO_ROOT,
    // ENV_FILE: a developer's .env must not change what a test configured.
    env: { ...process.env, LOG_LEVEL: 'info', ENV_FILE: '/dev/null', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code, signal) => resolve(code ?? (signal ? -1 : null))),
  );
  await new Promise<void>((resolve, reject) => {
    const matches = () => (typeof readyText === 'string' ? out.includes(readyText) : readyText.test(out));
    const timer = setTimeout(() => {
      cleanup();
      child.kill('SIGKILL');
      reject(new Error(`${entry} did not become ready in ${timeoutMs} ms:\n${out}`));
    }, timeoutMs);
    const onData = () => {
      if (matches()) {
        cleanup();
        resolve();
      }
    };
    const onExit = (code: number | null) => {
      cleanup();
      reject(new Error(`${entry} exited with ${code} before becoming ready:\n${out}`));
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
  return {
    child,
    exited,
    output: () => out,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode !== null || child.signalCode !== null) return exited;
      child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}

export function startWorker(env: Record<string, string>): Promise<ServiceProcess> {
  return startProcess('apps/worker/src/main.ts', env, '"worker started"');
}
