import { isClusterUrl, redisConnection } from '@quest/queue';
import { startRedis } from '@quest/testing/redis';
import { createNumberedAccounts } from '@quest/testing/seed';
import type { BaseCtx, ScenarioOutput, Verdict } from '../context.ts';
import type { Row } from '../stats.ts';
import { finish } from '../verify.ts';
import { type ApiScaleOptions, measurePoint, type PointResult, roleCpu } from './api-scale-point.ts';

interface OwnRedis {
  url: string;
  pid: number;
  stop(): Promise<void>;
}

/** A redis-server of its own (free port, temp dir, no persistence): its INFO counts this scenario alone. */
async function startOwnRedis(): Promise<OwnRedis> {
  const redis = await startRedis('none');
  return { url: redis.url, pid: redis.pid() ?? -1, stop: () => redis.stop() };
}

export async function apiScaleScenario(ctx: BaseCtx, o: ApiScaleOptions): Promise<ScenarioOutput> {
  const { infra } = ctx;
  const accounts = await createNumberedAccounts(infra.sql, o.accountPool);
  // Its own redis-server (so INFO counts only this scenario), or the bench's own cluster (--redis-cluster).
  const own: OwnRedis = isClusterUrl(infra.redisUrl)
    ? { url: infra.redisUrl, pid: -1, stop: async () => {} }
    : await startOwnRedis();
  const redis = redisConnection(own.url, { maxRetriesPerRequest: 1 });
  redis.on('error', () => {});
  const points: PointResult[] = [];
  const verdicts: Verdict[] = [];
  ctx.log(`api-scale: own redis-server at ${own.url} (pid ${own.pid})`);
  try {
    for (const n of o.apiCounts) {
      for (let run = 1; run <= o.repeat; run++) {
        const { point, verdict } = await measurePoint(ctx, o, { url: own.url, pid: own.pid, redis, accounts }, n, run);
        points.push(point);
        verdicts.push(verdict);
      }
    }
  } finally {
    redis.disconnect();
    await own.stop();
  }
  const { rows, notes } = apiScaleReport(o, points);
  return finish(ctx, 'api-scale', verdicts, rows, { points }, notes);
}

/** Per API process count, each run's figures side by side (rows) and in full (notes). */
function apiScaleReport(o: ApiScaleOptions, points: PointResult[]) {
  const per10k = (p: PointResult) => (p.redisCpuS * 10_000) / p.allocations;
  const rows: Omit<Row, 'status' | 'scenario'>[] = [];
  const notes: string[] = [];
  for (const n of o.apiCounts) {
    const ps = points.filter((p) => p.apis === n);
    if (!ps.length) continue;
    const list = (f: (p: PointResult) => string) => ps.map(f).join(' / ');
    rows.push({
      metric: `Redis CPU-s per 10,000 allocations, ${n} API`,
      unit: 'text',
      service: list((p) => per10k(p).toFixed(2)),
    });
    rows.push({
      metric: `Redis commands per allocation, ${n} API`,
      unit: 'text',
      service: list((p) => (p.redisCalls / p.allocations).toFixed(1)),
    });
    rows.push({
      metric: `items per job, ${n} API`,
      unit: 'text',
      service: list((p) => (p.jobs.items / Math.max(1, p.jobs.jobs)).toFixed(2)),
    });
    rows.push({ metric: `allocations/s, ${n} API`, unit: 'text', service: list((p) => p.rate.toFixed(0)) });
    rows.push({ metric: `202s, ${n} API`, unit: 'text', service: list((p) => String(p.accepted202)) });
    for (const p of ps) {
      const per = roleCpu(p.cpu);
      notes.push(
        `api-scale ${n} API run ${p.run}: ${p.ok200} × 200, ${p.accepted202} × 202, ${p.rate.toFixed(0)}/s, p50 ${p.p50?.toFixed(1)} ms, p99 ${p.p99?.toFixed(1)} ms; ` +
          `Redis ${p.redisCpuS.toFixed(2)} CPU-s, ${p.redisCalls} commands (top: ${p.topCommands.map(([k, v]) => `${k} ${v}`).join(', ')}); ` +
          `${p.jobs.jobs} jobs, ${(p.jobs.items / Math.max(1, p.jobs.jobs)).toFixed(2)} items/job; CPU µs per allocation: ${Object.entries(
            per,
          )
            .map(([k, v]) => `${k} ${Math.round((v * 1e6) / p.allocations)}`)
            .join(', ')}; other processes ${(p.cpu['other processes (not this bench)'] ?? 0).toFixed(1)} CPU-s`,
      );
    }
  }
  return { rows, notes };
}
