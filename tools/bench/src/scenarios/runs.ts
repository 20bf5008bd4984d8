import { runLoad, type LoadResult } from '../http-load.ts';
import type { Ctx, Verdict } from '../context.ts';
import { directCoalesced, directSingle } from '../direct.ts';
import { type JobStats, jobStats } from '../jobs.ts';
import { measured, withLimitPool } from '../measure.ts';
import { sampleRss } from '../probes/rss.ts';
import { seedQuests } from '../seed.ts';
import { rng } from '../stats.ts';
import { verifyDirect, verifyLoad } from '../verify.ts';

/**
 * The measured runs the load scenarios share: the service under closed-loop HTTP load, the same
 * load on the reference service, and the two ledger limits (single-item and coalesced lists).
 */

export interface ServiceRun {
  load: LoadResult;
  verdict: Verdict;
  quests: number[];
  cpu: Record<string, number>;
  jobs: JobStats;
  rss?: Record<string, { pid: number; peakRssMb: number; hwmMb: number; samples: number }>;
}

/**
 * `count` new quests for one run, and a seeded pick of (quest, account) over them and the account
 * pool: every run loads quests of its own, so runs do not share budget rows or lock waits.
 */
async function questsAndPick(ctx: Ctx, count: number, label: string, seed: number) {
  const quests = await seedQuests(ctx.infra.sql, ctx.owner.ownerId, count, label);
  const r = rng(seed);
  const pick = () => ({
    questId: quests[Math.floor(r() * quests.length)]!,
    address: ctx.accounts[Math.floor(r() * ctx.cfg.accountPool)]!,
  });
  return { quests, pick };
}

export async function throughputServiceRun(
  ctx: Ctx,
  label: string,
  opts: { durationS: number; hot: boolean; sampleMemory: boolean; seed: number },
) {
  const { cfg, infra, owner } = ctx;
  const { quests, pick } = await questsAndPick(ctx, opts.hot ? 1 : cfg.throughputQuests, label, opts.seed);
  const services = [ctx.api, ...ctx.workers()];
  const sampler = opts.sampleMemory ? sampleRss(services) : undefined;
  let fromMs = Date.now();
  const { result: load, cpu } = await measured(ctx, `${label} (service)`, () => {
    fromMs = Date.now();
    return runLoad({
      baseUrl: ctx.api.baseUrl,
      apiKey: owner.apiKey,
      connections: cfg.connections,
      durationS: opts.durationS,
      pick,
    });
  });
  const toMs = Date.now();
  const rss = sampler?.stop();
  const verdict = await verifyLoad(ctx, quests, load);
  const jobs = await jobStats(infra.redis, infra.prefix, cfg.partitions, fromMs, toMs + 1000);
  return { load, verdict, quests, cpu, jobs, rss } satisfies ServiceRun;
}

export async function singleLimit(ctx: Ctx, label: string, hot: boolean, durationS: number, seed: number) {
  const { quests, pick } = await questsAndPick(ctx, hot ? 1 : ctx.cfg.throughputQuests, label, seed);
  const { result: direct, cpu } = await withLimitPool(ctx, ctx.cfg.connections, (sql) =>
    measured(ctx, `${label} (single-item)`, () => directSingle(sql, { concurrency: ctx.cfg.connections, durationS, pick })),
  );
  return { direct, verdict: await verifyDirect(ctx, quests, direct), cpu };
}

export async function coalescedLimit(ctx: Ctx, label: string, hot: boolean, durationS: number, seed: number) {
  const { quests, pick } = await questsAndPick(ctx, hot ? 1 : ctx.cfg.throughputQuests, label, seed);
  const { result: direct, cpu } = await withLimitPool(ctx, ctx.cfg.partitions, (sql) =>
    measured(ctx, `${label} (coalesced)`, () =>
      directCoalesced(sql, {
        clients: ctx.cfg.connections,
        partitions: ctx.cfg.partitions,
        maxItems: 500,
        durationS,
        pick,
      }),
    ),
  );
  return { direct, verdict: await verifyDirect(ctx, quests, direct), cpu };
}

/** The same closed-loop load as the service's, sent to the reference service (when it runs). */
export async function referenceRun(
  ctx: Ctx,
  label: string,
  opts: { connections: number; quests: number; seed: number; amount?: number; durationS?: number },
): Promise<
  | {
      load: LoadResult;
      cpu: Record<string, number>;
      io: Record<string, { reads: number; writes: number }>;
      verdict: Verdict;
    }
  | undefined
> {
  const reference = ctx.reference;
  if (!reference) return undefined;
  const { quests, pick } = await questsAndPick(ctx, opts.quests, `${label}-reference`, opts.seed);
  ctx.log(`${label}: reference service, ${opts.connections} connection${opts.connections > 1 ? 's' : ''}`);
  const {
    result: load,
    cpu,
    io,
  } = await measured(ctx, `${label} (reference)`, () =>
    runLoad({
      baseUrl: reference.baseUrl,
      apiKey: ctx.owner.apiKey,
      connections: opts.connections,
      ...(opts.amount !== undefined ? { amount: opts.amount } : { durationS: opts.durationS }),
      pick,
    }),
  );
  return { load, cpu, io, verdict: await verifyLoad(ctx, quests, load) };
}
