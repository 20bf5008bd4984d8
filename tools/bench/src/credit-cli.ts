import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { REPO_ROOT } from './infra.ts';
import { adminEntry } from './procs.ts';

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

function peakRssMb(pid: number): number | undefined {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : undefined;
  } catch {
    return undefined;
  }
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
    const run = await new Promise<{ code: number | null; stdout: string; stderr: string; peak: number | undefined }>(
      (done, reject) => {
        const child = spawn(
          process.execPath,
          [
            resolve(REPO_ROOT, adminEntry()),
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
            cwd: dir,
            env: { PATH: process.env.PATH, HOME: process.env.HOME },
            stdio: ['ignore', 'pipe', 'pipe'],
          },
        );
        let stdout = '';
        let stderr = '';
        let peak: number | undefined;
        // VmHWM only grows: the last reading before exit is the peak, to within one interval.
        const sample = () => {
          const v = child.pid === undefined ? undefined : peakRssMb(child.pid);
          if (v !== undefined) peak = Math.max(peak ?? 0, v);
        };
        const timer = setInterval(sample, 25);
        child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
        child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
        child.on('error', (e) => {
          clearInterval(timer);
          reject(e);
        });
        child.on('exit', () => {
          clearInterval(timer);
        });
        child.on('close', (code) => done({ code, stdout, stderr, peak }));
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
      peakRssMb: run.peak,
      summary,
      stderr: run.stderr,
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
