import type { BenchOptions } from './cli.ts';
import type { ScenarioName } from './config.ts';
import type { BaseCtx, Ctx, ScenarioOutput } from './context.ts';
import { adminScenario } from './scenarios/admin.ts';
import { apiScaleScenario } from './scenarios/api-scale.ts';
import { batchScenario } from './scenarios/batch.ts';
import { hotScenario } from './scenarios/hot.ts';
import { latencyScenario } from './scenarios/latency.ts';
import { memoryOutput } from './scenarios/memory.ts';
import { openLoopScenario } from './scenarios/open-loop.ts';
import { reversalsScenario } from './scenarios/reversals.ts';
import { scaleScenario } from './scenarios/scale.ts';
import { throughputScenario } from './scenarios/throughput.ts';
import { webhooksScenario } from './scenarios/webhooks.ts';

/**
 * Which scenarios run, in which order, on what: the service's scenarios on the running service
 * (`ctx`), then api-scale on processes of its own, then admin against the database alone. Each
 * one's output is collected; one that throws becomes a FAILED row, and the others still run.
 */

export async function runScenarios(
  base: BaseCtx,
  ctx: Ctx | undefined,
  o: { selected: ReadonlySet<ScenarioName>; opts: BenchOptions; profileArgs(role: 'api' | 'worker'): string[] },
): Promise<ScenarioOutput[]> {
  const { cfg, log } = base;
  const { selected, opts, profileArgs } = o;
  const outputs: ScenarioOutput[] = [];
  const run = async (name: ScenarioName, fn: () => Promise<ScenarioOutput | ScenarioOutput[]>) => {
    const started = Date.now();
    const disturbedBefore = base.disturbances.length;
    try {
      const out = await fn();
      const disturbed = base.disturbances.length > disturbedBefore;
      for (const o of Array.isArray(out) ? out : [out]) {
        if (disturbed) for (const r of o.rows) r.status = `${r.status} (disturbed)`;
        outputs.push(o);
        for (const n of o.notes) log(n);
      }
    } catch (error) {
      log(`${name}: ERROR ${(error as Error).stack ?? error}`);
      outputs.push({
        name,
        ok: false,
        rows: [
          {
            scenario: name,
            metric: 'error',
            unit: 'text',
            service: String((error as Error).message).slice(0, 80),
            status: 'FAILED',
          },
        ],
        raw: { error: String((error as Error).stack ?? error) },
        notes: [],
      });
    }
    log(`${name}: done in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  };

  if (ctx) {
    if (selected.has('latency')) await run('latency', () => latencyScenario(ctx));
    // One throughput run serves both: memory samples the processes' RSS during it.
    if (selected.has('throughput') || selected.has('memory')) {
      await run(selected.has('throughput') ? 'throughput' : 'memory', async () => {
        const { out, svc } = await throughputScenario(ctx, 'throughput', {
          withLimit: selected.has('throughput'),
          sampleMemory: selected.has('memory'),
        });
        const list: ScenarioOutput[] = [];
        if (selected.has('throughput')) list.push(out);
        if (selected.has('memory')) list.push(memoryOutput(svc));
        return list;
      });
    }
    if (selected.has('reversals')) await run('reversals', () => reversalsScenario(ctx));
    if (selected.has('hot')) await run('hot', () => hotScenario(ctx));
    if (selected.has('open-loop')) await run('open-loop', () => openLoopScenario(ctx));
    if (selected.has('batch')) await run('batch', () => batchScenario(ctx));
    if (selected.has('webhooks')) await run('webhooks', () => webhooksScenario(ctx));
    if (selected.has('scale')) await run('scale', () => scaleScenario(ctx));
  }
  if (selected.has('api-scale')) {
    // Its own API and worker processes: stop the shared service's first, so they do not compete.
    await Promise.all((ctx ? [ctx.api, ...ctx.workers()] : []).map((s) => s.stop('SIGTERM')));
    await run('api-scale', () =>
      apiScaleScenario(base, {
        apiCounts: opts.apiProcesses ?? (cfg.quick ? [1, 2] : [1, 2, 4]),
        repeat: opts.repeat ?? 1,
        allocations: opts.allocations ?? (cfg.quick ? 4000 : 10_000),
        workers: cfg.workers,
        partitions: cfg.partitions,
        connections: cfg.connections,
        quests: cfg.throughputQuests,
        accountPool: cfg.accountPool,
        affinity: opts.affinity,
        profileArgs,
      }),
    );
  }
  // Last: it adds 100,000s of accounts and 1,000,000 payouts the other scenarios would work among.
  if (selected.has('admin')) await run('admin', () => adminScenario(ctx ?? base));
  return outputs;
}
