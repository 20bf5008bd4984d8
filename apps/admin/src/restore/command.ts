import type { Command } from 'commander';
import { parseNonNegativeInt } from '../args.ts';
import type { CommandOutput, Context } from '../context.ts';

// `quest-admin restore`'s command line. The work (restore/prepare.ts: PostgreSQL and Redis) is
// loaded only when the command runs: this module is part of every start, so it imports nothing heavy.

/** Adds `restore prepare` to the program (one line in program.ts). */
export function registerRestoreCommand(
  program: Command,
  ctx: Context,
  run: (fn: () => Promise<CommandOutput>) => Promise<void>,
): void {
  const restore = program
    .command('restore')
    .description('A database restored from a backup (docs/operations.md#backups-and-point-in-time-recovery)');
  restore
    .command('prepare')
    .description(
      'Run before starting the service on a restored database: report its recovery point and the requests Redis knows of that it has no trace of (rewound), then fence the old queue (delete its jobs, replies and pool state; keep the Idempotency-Key claims); refuses while a worker is live',
    )
    .option('--dry-run', 'report only: change nothing in Redis')
    .option('--list <n>', 'list at most this many rewound request keys (default 20)', parseNonNegativeInt, 20)
    .action((opts: { dryRun?: boolean; list: number }) =>
      run(async () => (await import('./prepare.ts')).prepareRestore(ctx, { dryRun: opts.dryRun === true, list: opts.list })),
    );
}
