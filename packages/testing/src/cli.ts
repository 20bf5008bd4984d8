import { type ChildProcess, spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { onExitCleanup } from './exit.ts';
import { ENTRIES, REPO_ROOT } from './processes.ts';

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
  /** stdout and stderr interleaved as they were printed. */
  output: string;
  /** Spawn to exit, in milliseconds. */
  ms: number;
  /** Killed for running longer than `timeoutMs`. */
  hung: boolean;
}

export interface CliOptions {
  /** The child's whole environment (nothing is inherited unless the caller passes it). */
  env: Record<string, string | undefined>;
  /** The launcher to run, relative to REPO_ROOT or absolute; default quest-admin's. */
  bin?: string;
  cwd?: string;
  /** SIGKILL the run after this long (then `hung`). */
  timeoutMs?: number;
  /** Called once it is spawned (e.g. to sample its memory); the function it returns is called when it has exited. */
  watch?: (child: ChildProcess) => () => void;
}

/** Run a command-line launcher (quest-admin by default) as a real process, as an operator would, and collect what it printed. */
export async function runCli(args: readonly string[], opts: CliOptions): Promise<CliRun> {
  const started = performance.now();
  const child = spawn(process.execPath, [resolve(REPO_ROOT, opts.bin ?? ENTRIES.admin), ...args], {
    cwd: opts.cwd ?? REPO_ROOT,
    env: opts.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const unregister = onExitCleanup(() => child.kill('SIGKILL'));
  let unwatch = opts.watch?.(child);
  const stopWatching = () => {
    unwatch?.();
    unwatch = undefined;
  };
  let stdout = '';
  let stderr = '';
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => {
    stdout += d;
    output += d;
  });
  child.stderr.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
    output += d;
  });
  let hung = false;
  const timer =
    opts.timeoutMs === undefined
      ? undefined
      : setTimeout(() => {
          hung = true;
          child.kill('SIGKILL');
        }, opts.timeoutMs);
  let ms: number | undefined;
  child.once('exit', () => {
    ms = performance.now() - started;
    stopWatching();
  });
  try {
    const code = await new Promise<number | null>((done, reject) => {
      child.once('error', reject);
      child.once('close', (c) => done(c));
    });
    return { code, stdout, stderr, output, ms: ms ?? performance.now() - started, hung };
  } finally {
    clearTimeout(timer);
    stopWatching();
    unregister();
  }
}
