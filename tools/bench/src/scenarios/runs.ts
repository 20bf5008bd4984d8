import type { Sql } from '@quest/db';
import { auditLedger } from '../audit.ts';
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
 * load on the reference service and on the obvious-queue peer, and the two ledger limits (single-item and coalesced lists).
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
export async function questsAndPick(
  ctx: Ctx,
  count: number,
  label: string,
  seed: number,
  on: { sql: Sql; ownerId: string } = { sql: ctx.infra.sql, ownerId: ctx.owner.ownerId },
) {
  const quests = await seedQuests(on.sql, on.ownerId, count, label);
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

/** A side the service is compared with: the lean reference, or the obvious-queue peer. */
export type Peerage = 'reference' | 'peer';

export interface ComparedSide {
  baseUrl: string;
  apiKey: string;
  ownerId: string;
  /** The database its rows are in (the peer has its own). */
  sql: Sql;
}

/** Where a comparison side answers and whose rows it uses; undefined when it is not running. */
export function comparedSide(ctx: Ctx, side: Peerage): ComparedSide | undefined {
  if (side === 'reference')
    return (
      ctx.reference && {
        baseUrl: ctx.reference.baseUrl,
        apiKey: ctx.owner.apiKey,
        ownerId: ctx.owner.ownerId,
        sql: ctx.infra.sql,
      }
    );
  const peer = ctx.peer;
  return peer && { baseUrl: peer.api.baseUrl, apiKey: peer.owner.apiKey, ownerId: peer.owner.ownerId, sql: peer.sql };
}

/**
 * The checks of a side's run: those of the service's runs, on the side's database; for the peer,
 * whose ledger the scenario's audit (of the bench database) does not see, its ledger's invariants too.
 */
export async function verifySide(ctx: Ctx, side: Peerage, quests: number[], load: LoadResult): Promise<Verdict> {
  const target = comparedSide(ctx, side)!;
  const verdict = await verifyLoad(ctx, quests, load, target.sql);
  if (side === 'reference') return verdict;
  const audit = await auditLedger(target.sql);
  const reasons = [...verdict.reasons];
  if (audit.invariantViolations) reasons.push(`peer: ${audit.invariantViolations} ledger invariant violations`);
  if (audit.duplicateKeys) reasons.push(`peer: ${audit.duplicateKeys} doubled request keys`);
  return { ...verdict, ok: reasons.length === 0, reasons };
}

export interface SideRun {
  load: LoadResult;
  cpu: Record<string, number>;
  io: Record<string, { reads: number; writes: number }>;
  /** Commands Redis executed over the run, all clients (the peer's figure; the reference sends none). */
  redis: { commands: number; scripts: number } | undefined;
  verdict: Verdict;
}

/** The same closed-loop load as the service's, sent to the reference service or the peer (when it runs). */
export async function sideRun(
  ctx: Ctx,
  side: Peerage,
  label: string,
  opts: { connections: number; quests: number; seed: number; amount?: number; durationS?: number },
): Promise<SideRun | undefined> {
  const target = comparedSide(ctx, side);
  if (!target) return undefined;
  const { quests, pick } = await questsAndPick(ctx, opts.quests, `${label}-${side}`, opts.seed, target);
  const name = side === 'reference' ? 'reference service' : 'obvious-queue peer';
  ctx.log(`${label}: ${name}, ${opts.connections} connection${opts.connections > 1 ? 's' : ''}`);
  const {
    result: load,
    cpu,
    io,
    redis,
  } = await measured(ctx, `${label} (${side})`, () =>
    runLoad({
      baseUrl: target.baseUrl,
      apiKey: target.apiKey,
      connections: opts.connections,
      ...(opts.amount !== undefined ? { amount: opts.amount } : { durationS: opts.durationS }),
      pick,
    }),
  );
  return { load, cpu, io, redis, verdict: await verifySide(ctx, side, quests, load) };
}
