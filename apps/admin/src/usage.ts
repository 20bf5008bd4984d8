import type { Command } from 'commander';

/** Report a bad combination of arguments the way commander reports a bad single one. */
export function usageError(cmd: Command, message: string): never {
  cmd.error(`error: ${message}`, { exitCode: 2, code: 'quest.usage' });
}

export function checkWindow(cmd: Command, opts: { start: Date; end: Date }): void {
  if (opts.end.getTime() <= opts.start.getTime())
    usageError(cmd, `--end (${opts.end.toISOString()}) must be after --start (${opts.start.toISOString()})`);
}
