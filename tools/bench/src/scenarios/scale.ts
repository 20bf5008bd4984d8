import type { Ctx, ScenarioOutput, Verdict } from '../context.ts';
import { cpuNote } from '../figures.ts';
import { shareText } from '../jobs.ts';
import type { Row } from '../stats.ts';
import { finish, lean } from '../verify.ts';
import { singleLimit, throughputServiceRun } from './runs.ts';

export async function scaleScenario(ctx: Ctx): Promise<ScenarioOutput> {
  const { cfg } = ctx;
  if (!ctx.shared.throughputLimit) {
    ctx.log(`scale: measuring the single-item limit first (${cfg.limitS} s)`);
    ctx.shared.throughputLimit = (await singleLimit(ctx, 'scale-limit', false, cfg.limitS, 32)).direct;
  }
  const limit = ctx.shared.throughputLimit;
  const rows: Omit<Row, 'status' | 'scenario'>[] = [];
  const verdicts: Verdict[] = [];
  const raw: Record<string, unknown> = {};
  const notes: string[] = [];
  let base: number | undefined;
  for (const n of cfg.scaleWorkers) {
    await ctx.restartWorkers(n);
    ctx.log(`scale: ${n} worker${n > 1 ? 's' : ''}: ${cfg.throughputS} s at ${cfg.connections} connections`);
    const svc = await throughputServiceRun(ctx, `scale-${n}`, {
      durationS: cfg.throughputS,
      hot: false,
      sampleMemory: true,
      seed: 40 + n,
    });
    verdicts.push(svc.verdict);
    base ??= svc.load.rate;
    rows.push({ metric: `allocations/s, ${n} worker${n > 1 ? 's' : ''}`, unit: '/s', service: svc.load.rate, limit: limit.rate });
    rows.push({
      metric: `p99, ${n} worker${n > 1 ? 's' : ''}`,
      unit: 'ms',
      service: svc.load.latency.p99,
      limit: limit.latency.p99,
    });
    rows.push({ metric: `speed-up vs 1 worker, ${n}w`, unit: 'x', service: svc.load.rate / base, limit: undefined, ratio: null });
    rows.push({ metric: `work share, ${n}w (items by worker)`, unit: 'text', service: shareText(svc.jobs), limit: undefined });
    notes.push(cpuNote(`scale ${n}w`, svc.load.elapsedS, svc.cpu, svc.load.ok200));
    notes.push(
      `scale ${n}w: peak RSS ${Object.entries(svc.rss ?? {})
        .map(([k, v]) => `${k} ${v.peakRssMb.toFixed(0)} MB`)
        .join(', ')}; ${svc.jobs.jobs} jobs, ${(svc.jobs.items / Math.max(1, svc.jobs.jobs)).toFixed(1)} items/job`,
    );
    raw[`workers_${n}`] = { service: { ...lean(svc.load), cpu: svc.cpu, jobs: svc.jobs, rss: svc.rss } };
  }
  return finish(ctx, 'scale', verdicts, rows, raw, notes);
}
