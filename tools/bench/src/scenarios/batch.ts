import { runBatchesHttp } from '../batch-http.ts';
import type { Ctx, ScenarioOutput, Verdict } from '../context.ts';
import { runCreditCli } from '../credit-cli.ts';
import { directBatches } from '../direct.ts';
import { cpuNote } from '../figures.ts';
import { measured, withLimitPool } from '../measure.ts';
import { seedQuests } from '../seed.ts';
import { formatValue, groupThousands } from '../stats.ts';
import { finish, lean, verifyBatch, verifyCreditCli, verifyDirect } from '../verify.ts';

/** The batch scenario's credits as batches through the service's HTTP API, `concurrency` in flight, measured. */
function measuredBatches(ctx: Ctx, label: string, questId: number, concurrency: number) {
  const { cfg, owner } = ctx;
  const addresses = ctx.accounts.slice(0, cfg.batchItems);
  return measured(ctx, label, () =>
    runBatchesHttp({
      baseUrl: ctx.api.baseUrl,
      apiKey: owner.apiKey,
      questId,
      addresses,
      batchSize: cfg.batchSize,
      concurrency,
    }),
  );
}

export async function batchScenario(ctx: Ctx): Promise<ScenarioOutput> {
  const { cfg, infra, owner } = ctx;
  const addresses = ctx.accounts.slice(0, cfg.batchItems);
  const nBatches = Math.ceil(cfg.batchItems / cfg.batchSize);
  const [qConc, qSeq, qLimit, qCli] = await seedQuests(infra.sql, owner.ownerId, 4, 'batch');
  const verdicts: Verdict[] = [];

  ctx.log(`batch: ${cfg.batchItems} credits as ${nBatches} × ${cfg.batchSize}, ${cfg.batchConcurrency} in flight`);
  const { result: conc, cpu: concCpu } = await measuredBatches(ctx, 'batch in flight (service)', qConc!, cfg.batchConcurrency);
  verdicts.push(await verifyBatch(ctx, qConc!, conc));

  ctx.log(`batch: the same, sequential`);
  const { result: seq, cpu: seqCpu } = await measuredBatches(ctx, 'batch sequential (service)', qSeq!, 1);
  verdicts.push(await verifyBatch(ctx, qSeq!, seq));

  ctx.log(`batch: quest-admin credit of ${groupThousands(addresses.length)} rows (the CLI process, spawn to exit)`);
  const { result: cli, cpu: cliCpu } = await measured(
    ctx,
    'batch CLI (service)',
    () => runCreditCli({ baseUrl: ctx.api.baseUrl, apiKey: owner.apiKey, questId: qCli!, addresses }),
    { sampleEveryMs: 50 },
  );
  verdicts.push(await verifyCreditCli(ctx, qCli!, addresses.length, cli));

  ctx.log(`batch: limit, processBatch-style chunks of ${cfg.chunkSize} through applyBatchChunk`);
  const { result: direct, cpu: limitCpu } = await withLimitPool(ctx, 1, (sql) =>
    measured(ctx, 'batch (limit)', () =>
      directBatches(sql, {
        questId: qLimit!,
        ownerId: owner.ownerId,
        addresses,
        batchSize: cfg.batchSize,
        chunkSize: cfg.chunkSize,
      }),
    ),
  );
  verdicts.push(await verifyDirect(ctx, [qLimit!], direct));

  const p = (xs: number[]) => `${Math.round(Math.min(...xs))}–${Math.round(Math.max(...xs))} ms`;
  return finish(
    ctx,
    'batch',
    verdicts,
    [
      { metric: `credits/s, ${cfg.batchConcurrency} batches in flight`, unit: '/s', service: conc.rate, limit: direct.rate },
      { metric: 'credits/s, sequential', unit: '/s', service: seq.rate, limit: direct.rate },
      {
        metric: `quest-admin credit, ${groupThousands(addresses.length)} rows (CLI, spawn to exit)`,
        unit: '/s',
        service: cli.rate,
        limit: direct.rate,
      },
      {
        metric: 'quest-admin credit ÷ batches in flight',
        unit: 'x',
        service: cli.rate / conc.rate,
        limit: undefined,
      },
      { metric: 'quest-admin credit peak RSS (goal ≤ 200 MB)', unit: 'MB', service: cli.peakRssMb ?? null, limit: undefined },
      {
        metric: 'end-to-end time, in flight / sequential',
        unit: 'text',
        service: `${conc.elapsedS.toFixed(2)} s / ${seq.elapsedS.toFixed(2)} s`,
        limit: undefined,
      },
    ],
    {
      concurrent: { ...lean(conc), cpu: concCpu },
      sequential: { ...lean(seq), cpu: seqCpu },
      cli: { ...cli, stderr: cli.stderr.slice(0, 2000), cpu: cliCpu },
      limit: { ...lean(direct), cpu: limitCpu },
    },
    [
      `batch: in flight ${conc.answered200} × 200 + ${conc.answered202} × 202, per batch ${p(conc.batchMs)}; sequential ${seq.answered200} × 200 + ${seq.answered202} × 202, per batch ${p(seq.batchMs)}; limit ${direct.transactions} chunk tx, chunk p50 ${formatValue(direct.latency.p50, 'ms')}`,
      cpuNote('batch in flight (service)', conc.elapsedS, concCpu, conc.succeeded),
      cpuNote('batch sequential (service)', seq.elapsedS, seqCpu, seq.succeeded),
      `batch CLI: ${cli.elapsedS.toFixed(2)} s spawn to exit, peak RSS ${cli.peakRssMb === undefined ? 'n/a' : `${Math.round(cli.peakRssMb)} MB`}`,
      cpuNote('batch CLI (service)', cli.elapsedS, cliCpu, cli.summary?.credited ?? 0),
      cpuNote('batch (limit)', direct.elapsedS, limitCpu, direct.completed),
    ],
  );
}
