import type { ChildProcess } from 'node:child_process';

export interface WatchedProcess {
  child: ChildProcess;
  name?: string;
  output?(): string;
}

/**
 * Poll `probe` every `intervalMs` until it returns a value (not undefined) and return it; a probe
 * that throws counts as not yet. Fails after `timeoutMs` with the last error, and at once when the
 * process it waits for (`process`) has exited, with that process's output.
 */
export async function until<T>(
  what: string,
  timeoutMs: number,
  probe: () => Promise<T | undefined>,
  opts: { intervalMs?: number; process?: WatchedProcess } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  const proc = opts.process;
  let last: unknown;
  for (;;) {
    if (proc && (proc.child.exitCode !== null || proc.child.signalCode !== null)) {
      throw new Error(
        `${proc.name ?? 'the process'} exited (${proc.child.exitCode ?? proc.child.signalCode}) before ${what}${tail(proc)}`,
      );
    }
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}${proc ? tail(proc) : ''}`);
    }
    await new Promise((r) => setTimeout(r, opts.intervalMs ?? 100));
  }
}

const tail = (proc: WatchedProcess) => (proc.output ? `:\n${proc.output()}` : '');
