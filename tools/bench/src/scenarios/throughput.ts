import type { Ctx } from '../context.ts';
import { cpuNote, cpuPerCredit } from '../figures.ts';
import { shareText } from '../jobs.ts';
import { formatValue, type Row } from '../stats.ts';
import { finish, lean, sumValues } from '../verify.ts';
import { coalescedLimit, sideRun, singleLimit, throughputServiceRun } from './runs.ts';

export async function throughputScenario(
  ctx: Ctx,
  which: 'throughput' | 'hot',
  opts: { withLimit: boolean; sampleMemory: boolean },
) {
  const { cfg } = ctx;
  const hot = which === 'hot';
  const durationS = hot ? cfg.hotS : cfg.throughputS;
  ctx.log(
    `${which}: ${cfg.connections} connections, ${hot ? '1 quest' : `${cfg.throughputQuests} quests`}, ${durationS} s, ${ctx.workers().length} workers`,
  );
  const svc = await throughputServiceRun(ctx, which, { durationS, hot, sampleMemory: opts.sampleMemory, seed: hot ? 3 : 2 });
  const notes = [
    `${which}: ${svc.load.ok200} × 200, ${svc.load.accepted202} × 202, non-2xx ${JSON.stringify(svc.load.otherStatus)}, ` +
      `in flight at stop ${svc.load.sent - svc.load.received}; ${svc.jobs.jobs} jobs, ${(svc.jobs.items / Math.max(1, svc.jobs.jobs)).toFixed(1)} items/job; share ${shareText(svc.jobs)}`,
    cpuNote(`${which} (service)`, svc.load.elapsedS, svc.cpu, svc.load.ok200),
  ];
  const verdicts = [svc.verdict];
  const sideLoad = { connections: cfg.connections, quests: hot ? 1 : cfg.throughputQuests, durationS, seed: hot ? 3 : 2 };
  const ref = await sideRun(ctx, 'reference', which, sideLoad);
  const peer = await sideRun(ctx, 'peer', which, sideLoad);
  for (const [side, run] of [
    ['reference', ref],
    ['peer', peer],
  ] as const) {
    if (!run) continue;
    verdicts.push(run.verdict);
    notes.push(cpuNote(`${which} (${side})`, run.load.elapsedS, run.cpu, run.load.ok200));
  }
  let single: Awaited<ReturnType<typeof singleLimit>> | undefined;
  let coalesced: Awaited<ReturnType<typeof coalescedLimit>> | undefined;
  if (opts.withLimit) {
    ctx.log(`${which}: limit, ${cfg.connections} concurrent single-item ledger transactions, ${cfg.limitS} s`);
    single = await singleLimit(ctx, `${which}-limit`, hot, cfg.limitS, hot ? 13 : 12);
    verdicts.push(single.verdict);
    if (!hot) ctx.shared.throughputLimit = single.direct;
    ctx.log(`${which}: limit, coalesced lists (${cfg.partitions} partitions, ${cfg.connections} clients), ${cfg.coalescedS} s`);
    coalesced = await coalescedLimit(ctx, `${which}-limit-coalesced`, hot, cfg.coalescedS, hot ? 23 : 22);
    verdicts.push(coalesced.verdict);
    notes.push(cpuNote(`${which} limit (single-item)`, single.direct.elapsedS, single.cpu, single.direct.completed));
    notes.push(cpuNote(`${which} limit (coalesced)`, coalesced.direct.elapsedS, coalesced.cpu, coalesced.direct.completed));
    notes.push(
      `${which} limit: single-item ${single.direct.transactions} tx; coalesced ${coalesced.direct.transactions} tx, ` +
        `${coalesced.direct.itemsPerTransaction?.toFixed(1)} items/tx, per-item wait p50 ${formatValue(coalesced.direct.latency.p50, 'ms')} p99 ${formatValue(coalesced.direct.latency.p99, 'ms')}`,
    );
  }
  const non2xx = sumValues(svc.load.otherStatus);
  const rows: Omit<Row, 'status' | 'scenario'>[] = [
    {
      metric: 'allocations/s (limit: single-item tx)',
      unit: '/s',
      service: svc.load.rate,
      limit: single?.direct.rate ?? null,
      reference: ref?.load.rate,
      peer: peer?.load.rate,
    },
    {
      metric: 'allocations/s (limit: coalesced lists)',
      unit: '/s',
      service: svc.load.rate,
      limit: coalesced?.direct.rate ?? null,
    },
    {
      metric: 'p50',
      unit: 'ms',
      service: svc.load.latency.p50,
      limit: single?.direct.latency.p50 ?? null,
      reference: ref?.load.latency.p50,
      peer: peer?.load.latency.p50,
    },
    {
      metric: 'p99',
      unit: 'ms',
      service: svc.load.latency.p99,
      limit: single?.direct.latency.p99 ?? null,
      reference: ref?.load.latency.p99,
      peer: peer?.load.latency.p99,
    },
    {
      metric: 'CPU per allocation (all processes)',
      unit: 'ms',
      service: cpuPerCredit(svc.cpu, svc.load.ok200, 'service'),
      limit: single ? cpuPerCredit(single.cpu, single.direct.completed, 'limit') : null,
      reference: ref ? cpuPerCredit(ref.cpu, ref.load.ok200, 'reference') : undefined,
      peer: peer ? cpuPerCredit(peer.cpu, peer.load.ok200, 'peer') : undefined,
    },
    { metric: 'non-2xx / 202', unit: 'text', service: `${non2xx} / ${svc.load.accepted202}`, limit: undefined },
  ];
  if (hot) rows.splice(2, 1); // hot: no p50 row (kept in JSON)
  const raw: Record<string, unknown> = {
    service: { ...lean(svc.load), cpu: svc.cpu, jobs: svc.jobs },
    limitSingle: single && { ...lean(single.direct), cpu: single.cpu },
    limitCoalesced: coalesced && lean(coalesced.direct),
    reference: ref && { ...lean(ref.load), cpu: ref.cpu },
    peer: peer && { ...lean(peer.load), cpu: peer.cpu, redis: peer.redis },
  };
  const out = await finish(ctx, which, verdicts, rows, raw, notes);
  return { out, svc };
}
