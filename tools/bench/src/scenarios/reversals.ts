import type { Ctx, ScenarioOutput } from '../context.ts';
import { cpuNote } from '../figures.ts';
import { type AckedPayout, runLoad } from '../http-load.ts';
import { shareText, jobStats } from '../jobs.ts';
import { measured } from '../measure.ts';
import { ReversalLoad } from '../reversal-load.ts';
import { seedQuests } from '../seed.ts';
import { formatValue, rng, type Row } from '../stats.ts';
import { finish, lean, sumValues, verifyLoad, verifyReversals } from '../verify.ts';

/**
 * reversals: the throughput load (same connections, quests of its own, same duration) with
 * `cfg.reversals` reversals mixed in — each of a payout the load was just given, sent by
 * `cfg.reversalClients` closed-loop clients while the load runs (reversal-load.ts). Reports the
 * reversals' rate and latency beside the allocations' of the same run, and checks order and
 * exactly-once (verifyReversals) on top of the load's own checks.
 */
const MAX_EXTRA_S = 120;

export async function reversalsScenario(ctx: Ctx): Promise<ScenarioOutput> {
  const { cfg, infra, owner } = ctx;
  const durationS = cfg.throughputS;
  ctx.log(
    `reversals: ${cfg.connections} allocation connections, ${cfg.throughputQuests} quests, ${durationS} s, ` +
      `${cfg.reversals} reversals from ${cfg.reversalClients} clients, ${ctx.workers().length} workers`,
  );
  const quests = await seedQuests(infra.sql, owner.ownerId, cfg.throughputQuests, 'reversals');
  const r = rng(4);
  const pick = () => ({
    questId: quests[Math.floor(r() * quests.length)]!,
    address: ctx.accounts[Math.floor(r() * cfg.accountPool)]!,
  });
  const acked: AckedPayout[] = [];
  const reversing = new ReversalLoad({
    baseUrl: ctx.api.baseUrl,
    apiKey: owner.apiKey,
    clients: cfg.reversalClients,
    count: cfg.reversals,
    replayEvery: 10,
    reverseAgainEvery: 10,
    tag: `bench-${Date.now()}`,
    starvedMs: 5_000,
  });
  let fromMs = Date.now();
  const { result, cpu } = await measured(ctx, 'reversals (service)', async () => {
    fromMs = Date.now();
    const reversals = reversing.run();
    const load = await runLoad({
      baseUrl: ctx.api.baseUrl,
      apiKey: owner.apiKey,
      connections: cfg.connections,
      // The allocations go on until the reversals are done too (a loaded machine may need longer
      // than the throughput's duration to pay out enough to reverse), for at most MAX_EXTRA_S more.
      durationS: durationS + MAX_EXTRA_S,
      onStart: (stop) => {
        void Promise.all([new Promise((r) => setTimeout(r, durationS * 1000)), reversals]).then(stop);
      },
      pick,
      onPayout: (p) => {
        acked.push(p);
        reversing.offer(p);
      },
    });
    reversing.loadEnded();
    return { load, reversals: await reversals };
  });
  const toMs = Date.now();
  const { load, reversals } = result;
  const loadVerdict = await verifyLoad(ctx, quests, load);
  const revVerdict = await verifyReversals(ctx, quests, acked, reversals, cfg.reversals);
  const jobs = await jobStats(infra.redis, infra.prefix, cfg.partitions, fromMs, toMs + 1000);
  const rc = revVerdict.reversals;
  const notes = [
    `reversals: allocations ${load.ok200} × 200, ${load.accepted202} × 202, non-2xx ${JSON.stringify(load.otherStatus)}; ` +
      `reversals ${reversals.reversals.length} × 200 (${reversals.duringLoad} answered while the allocation load ran), ` +
      `${reversals.accepted202} × 202, non-2xx ${JSON.stringify(reversals.otherStatus)}; ` +
      `${reversals.replays.ok}/${reversals.replays.sent} retried keys replayed, ${reversals.reverseAgain.refused}/${reversals.reverseAgain.sent} second reversals refused; ` +
      `${rc.orderPairs} allocation/reversal pairs compared for order, ${rc.orderViolations} out of order; ` +
      `${jobs.jobs} jobs, ${(jobs.items / Math.max(1, jobs.jobs)).toFixed(1)} items/job; share ${shareText(jobs)}`,
    cpuNote('reversals (service)', load.elapsedS, cpu, load.ok200 + reversals.reversals.length),
  ];
  const rows: Omit<Row, 'status' | 'scenario'>[] = [
    { metric: 'allocations/s (reversals mixed in)', unit: '/s', service: load.rate, limit: undefined },
    { metric: 'reversals/s', unit: '/s', service: reversals.rate, limit: undefined },
    { metric: 'allocation p50', unit: 'ms', service: load.latency.p50, limit: undefined },
    { metric: 'reversal p50', unit: 'ms', service: reversals.latency.p50, limit: undefined },
    { metric: 'allocation p99', unit: 'ms', service: load.latency.p99, limit: undefined },
    { metric: 'reversal p99', unit: 'ms', service: reversals.latency.p99, limit: undefined },
    {
      metric: 'reversals: acknowledged / in PostgreSQL / doubled / out of order',
      unit: 'text',
      service: `${rc.acknowledged} / ${rc.reversalsInDb} / ${rc.doubled} / ${rc.orderViolations}`,
      limit: undefined,
    },
    {
      metric: 'non-2xx / 202 (allocations; reversals)',
      unit: 'text',
      service: `${sumValues(load.otherStatus)} / ${load.accepted202}; ${sumValues(reversals.otherStatus)} / ${reversals.accepted202}`,
      limit: undefined,
    },
  ];
  ctx.log(
    `reversals: allocations ${formatValue(load.rate, '/s')} p99 ${formatValue(load.latency.p99, 'ms')}; ` +
      `reversals ${formatValue(reversals.rate, '/s')} p99 ${formatValue(reversals.latency.p99, 'ms')}`,
  );
  const { reversals: ackedReversals, ...reversalFigures } = reversals;
  const raw: Record<string, unknown> = {
    service: { ...lean(load), cpu, jobs },
    reversals: { ...reversalFigures, acknowledged: ackedReversals.length, check: rc },
  };
  return finish(ctx, 'reversals', [loadVerdict, revVerdict], rows, raw, notes);
}
