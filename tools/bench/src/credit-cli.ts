import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli } from '@quest/testing/cli';
import { readRss } from './probes/rss.ts';
import { adminEntry } from './services.ts';

/**
 * `quest-admin credit` as an operator runs it: the real CLI process (bundled like `npm run build`
 * bundles it, or apps/admin/bin/quest-admin.js with --runtime tsx)
 * crediting a CSV of `address,points` rows to one quest through the running API, timed from spawn
 * to exit (process start, one pass over the file, batches in flight, every result paged back and
 * recorded). Its peak resident memory is read from /proc while it runs (VmHWM, Linux only).
 */

export interface CreditCliResult {
  code: number | null;
  elapsedS: number;
  /** Rows credited per second, spawn to exit. */
  rate: number;
  /** Peak RSS of the CLI process, MB (undefined where /proc is missing). */
  peakRssMb: number | undefined;
  /** The --json summary, when it printed one. */
  summary: { total?: number; succeeded?: number; credited?: number; replayed?: number; failed?: number } | undefined;
  stderr: string;
}

export async function runCreditCli(opts: {
  baseUrl: string;
  apiKey: string;
  questId: number;
  addresses: readonly string[];
  points?: number;
  /** Extra flags (e.g. --concurrency, --batch-size). */
  args?: string[];
}): Promise<CreditCliResult> {
  const dir = await mkdtemp(join(tmpdir(), 'quest-bench-credit-'));
  const file = join(dir, 'credits.csv');
  const points = opts.points ?? 1;
  await writeFile(file, `address,points\n${opts.addresses.map((a) => `${a},${points}`).join('\n')}\n`);
  try {
    const started = performance.now();
    let peak: number | undefined;
    const run = await runCli(
      [
        'credit',
        '--quest',
        String(opts.questId),
        '--key',
        opts.apiKey,
        '--file',
        file,
        '--base-url',
        opts.baseUrl,
        '--json',
        ...(opts.args ?? []),
      ],
      {
        bin: adminEntry(),
        cwd: dir,
        env: { PATH: process.env.PATH, HOME: process.env.HOME },
        // VmHWM only grows: the last reading before exit is the peak, to within one interval.
        watch: (child) => {
          const timer = setInterval(() => {
            // A process that has died but is not reaped yet has no VmHWM line (NaN): skipped.
            const v = child.pid === undefined ? undefined : readRss(child.pid)?.hwmMb;
            if (v !== undefined && Number.isFinite(v)) peak = Math.max(peak ?? 0, v);
          }, 25);
          return () => clearInterval(timer);
        },
      },
    );
    const elapsedS = (performance.now() - started) / 1000;
    let summary: CreditCliResult['summary'];
    try {
      summary = JSON.parse(run.stdout) as CreditCliResult['summary'];
    } catch {
      summary = undefined;
    }
    return {
      code: run.code,
      elapsedS,
      rate: (summary?.credited ?? 0) / elapsedS,
      peakRssMb: peak,
      summary,
      stderr: run.stderr,
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
