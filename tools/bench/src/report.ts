import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '@quest/testing/processes';
import type { BenchOptions } from './cli.ts';
import type { BenchConfig, ScenarioName } from './config.ts';
import type { BaseCtx, ScenarioOutput } from './context.ts';
import { goalTable } from './goals.ts';
import { formatMachine, type MachineInfo } from './machine.ts';
import { summarizeProfileDir } from './profile.ts';
import { type Row, resultsTable } from './stats.ts';

/**
 * What a run prints at its end (the results and goals tables, the machine and the code measured)
 * and the JSON file it writes with everything, plus the CPU profiles' summaries under --profile.
 */

export interface RunReport {
  startedAt: Date;
  tag: string;
  cfg: BenchConfig;
  opts: BenchOptions;
  selected: ReadonlySet<ScenarioName>;
  machine: MachineInfo;
  source: { head: string; dirty: string[] };
  base: BaseCtx;
  outputs: ScenarioOutput[];
  problems: { process: string; pid: number; warnings: number; sample: string[] }[];
  profileDir: string | undefined;
}

export function report(run: RunReport): void {
  const { startedAt, tag, cfg, opts, selected, machine, source, base, outputs, problems, profileDir } = run;
  const rows: Row[] = outputs.flatMap((o) => o.rows);
  const table = resultsTable(rows);
  const goals = goalTable(outputs, cfg);
  const elapsedS = (Date.now() - startedAt.getTime()) / 1000;

  const lines = [
    '',
    `## Quest rewards bench — ${cfg.quick ? 'quick' : 'full'} run, ${startedAt.toISOString()} (${elapsedS.toFixed(0)} s)`,
    '',
    formatMachine(machine),
    `code: ${source.head}${source.dirty.length ? ` + uncommitted changes in ${source.dirty.join(', ')}` : ''}`,
    `config: ${opts.runtime} runtime, ${cfg.workers} workers (scale: ${cfg.scaleWorkers.join('/')}), ${cfg.partitions} partitions, ${cfg.connections} connections, ` +
      `throughput/hot ${cfg.throughputS}/${cfg.hotS} s, limit ${cfg.limitS} s (coalesced ${cfg.coalescedS} s), ` +
      `${cfg.latencyRequests} latency requests, batch ${cfg.batchItems} = ${Math.ceil(cfg.batchItems / cfg.batchSize)} × ${cfg.batchSize} (chunks of ${cfg.chunkSize}), ` +
      `admin: import ${cfg.importRows} rows, audit ${cfg.auditPayouts} payouts`,
    '',
    'ratio = service ÷ limit (rates: higher is better, 1.00 = the service reaches the direct ledger transaction; latencies and times: lower is better).',
    'admin: service = the quest-admin CLI process, spawn to exit; limit = the @quest/db function it calls, in the bench process.',
    '“(disturbed)”: other processes on this shared machine used > 10 % of its CPU during a measured run of that scenario (see Disturbances).',
    'Throughput/hot ratio uses the single-item limit (what one-request-one-transaction could do); the coalesced-lists row is the ceiling of the service’s own job shape.',
    '',
    table,
    '',
    '### Goals (reported, not asserted)',
    '',
    goals,
    '',
  ];
  if (base.disturbances.length) {
    lines.push('### Disturbances (other processes on this shared machine)', '', ...base.disturbances.map((d) => `- ${d}`), '');
  }
  for (const p of problems)
    if (p.warnings) lines.push(`${p.process} logged ${p.warnings} warn/error lines, e.g. ${p.sample[0]?.slice(0, 300)}`);
  console.log(lines.join('\n'));

  mkdirSync(opts.out, { recursive: true });
  const file = join(opts.out, `bench-${tag}-${cfg.quick ? 'quick' : 'full'}.json`);
  const json = {
    startedAt: startedAt.toISOString(),
    finishedAt: new Date().toISOString(),
    elapsedS,
    mode: cfg.quick ? 'quick' : 'full',
    runtime: opts.runtime,
    scenarios: [...selected],
    config: cfg,
    machine,
    source,
    table,
    goals,
    rows,
    results: Object.fromEntries(outputs.map((o) => [o.name, { ok: o.ok, notes: o.notes, ...o.raw }])),
    processWarnings: problems,
    windows: base.windows,
    disturbances: base.disturbances,
    profileDir,
  };
  writeFileSync(file, `${JSON.stringify(json, null, 2)}\n`);
  console.log(`results written to ${file}`);

  if (profileDir) {
    writeFileSync(join(profileDir, 'windows.json'), `${JSON.stringify(base.windows, null, 2)}\n`);
    const serviceWindows = base.windows.filter((w) => w.label.includes('(service)'));
    console.log(`\nCPU profiles in ${profileDir} (summarised over the ${serviceWindows.length} measured service windows)`);
    for (const role of ['api', 'worker'] as const) {
      const summary = summarizeProfileDir(join(profileDir, role), 25, serviceWindows);
      if (summary) console.log(`\n### ${role}\n${summary}`);
    }
  }
}

/** Which code was measured: HEAD and the files of apps/ and packages/ changed but not committed. */
export function gitState(): { head: string; dirty: string[] } {
  const git = (args: string[]) => {
    try {
      // trimEnd only: porcelain lines start with a status column that may be a space.
      return execFileSync('git', args, { cwd: REPO_ROOT, encoding: 'utf8' }).trimEnd();
    } catch {
      return '';
    }
  };
  const head = git(['log', '-1', '--format=%h %s']) || 'unknown';
  const dirty = git(['status', '--porcelain', '--', 'apps', 'packages'])
    .split('\n')
    .filter(Boolean)
    .map((l) => l.slice(3));
  return { head, dirty };
}
