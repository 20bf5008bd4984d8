import type { Ctx, ScenarioOutput } from '../context.ts';
import { cpuPerCredit } from '../figures.ts';
import type { LoadResult } from '../http-load.ts';
import { measured } from '../measure.ts';
import { openLoopPool, runOpenLoop } from '../open-loop.ts';
import { seedQuests } from '../seed.ts';
import { formatValue, rng } from '../stats.ts';
import { finish, lean, sumValues, verifyLoad } from '../verify.ts';
import { type ComparedSide, comparedSide, type Peerage, verifySide } from './runs.ts';

/**
 * Open loop (`open-loop.ts`): allocations arrive at a constant rate over 1,000 quests, stepped up
 * by STEP× from START/s, each step `openLoopStepS` seconds (after 1 s at its rate, not measured), until a step is not
 * sustained — every request answered 200 and p99 (from each request's due time) ≤ P99_LIMIT_MS.
 * Then the same ladder on the reference service and on the obvious-queue peer. Reported: the
 * highest sustained rate of each side and its p99, and the first rate that was not sustained.
 */

export const OPEN_LOOP_P99_LIMIT_MS = 100;
const START = 100;
const STEP = 1.25;
const MAX_STEPS = 16;
/** Connections at most: enough for every request due within 0.4 s at the highest step. */
const MAX_CONNECTIONS = 1024;

interface Step {
  rate: number;
  load: Omit<LoadResult, 'payoutIds'> & { payoutIdCount: number; due: number };
  sustained: boolean;
  why: string;
  cpu: Record<string, number>;
  /** Commands Redis executed during the step (of which Lua scripts), all processes. */
  redis?: { commands: number; scripts: number };
}

/** Whether a step held its rate: nothing but 200s, every due request answered, p99 within the limit. */
export function sustainedStep(
  load: Pick<LoadResult, 'ok200' | 'accepted202' | 'otherStatus' | 'errors' | 'timeouts' | 'latency'> & { due: number },
): {
  sustained: boolean;
  why: string;
} {
  const why: string[] = [];
  const non2xx = sumValues(load.otherStatus);
  if (load.ok200 < load.due) why.push(`${load.due - load.ok200} of ${load.due} not answered 200`);
  if (load.accepted202) why.push(`${load.accepted202} × 202`);
  if (non2xx) why.push(`${non2xx} non-2xx`);
  if (load.errors || load.timeouts) why.push(`${load.errors} errors, ${load.timeouts} timeouts`);
  if (!(load.latency.p99 <= OPEN_LOOP_P99_LIMIT_MS)) why.push(`p99 ${formatValue(load.latency.p99, 'ms')}`);
  return { sustained: why.length === 0, why: why.join(', ') };
}

async function ladder(ctx: Ctx, side: 'service' | Peerage, target: ComparedSide, seed: number) {
  const { baseUrl } = target;
  const steps: Step[] = [];
  const r = rng(seed);
  // One set of quests and one pool for the whole ladder, each step warmed up (below): a step must not
  // pay for connection set-up or for the first authorization of its quests, which no steady client does.
  const quests = await seedQuests(target.sql, target.ownerId, ctx.cfg.throughputQuests, `open-${side}`);
  const pick = () => ({
    questId: quests[Math.floor(r() * quests.length)]!,
    address: ctx.accounts[Math.floor(r() * ctx.cfg.accountPool)]!,
  });
  const pool = openLoopPool(baseUrl, MAX_CONNECTIONS);
  const runs: LoadResult[] = [];
  const run = (rate: number, durationS: number) =>
    runOpenLoop({ baseUrl, apiKey: target.apiKey, rate, durationS, connections: MAX_CONNECTIONS, pick, pool });
  try {
    for (let i = 0, rate = START; i < MAX_STEPS; i++, rate = Math.round(rate * STEP)) {
      // Each step is warmed up for 1 s at its own rate right before it is measured (after the wait
      // for a quiet machine, during which pools may close idle connections): a steady client at
      // that rate has its connections open.
      const {
        result: load,
        cpu,
        redis,
      } = await measured(ctx, `open-loop ${side} ${rate}/s`, () => run(rate, ctx.cfg.openLoopStepS), {
        warmUp: async () => runs.push(await run(rate, 1)),
      });
      runs.push(load);
      const s = sustainedStep(load);
      steps.push({ rate, load: lean(load), cpu, redis, ...s });
      // CPU of this side's processes (cpuPerCredit's grouping): per second of the step, and per allocation.
      const cores = (cpuPerCredit(cpu, ctx.cfg.openLoopStepS, side) ?? 0) / 1000;
      const perAllocation = cpuPerCredit(cpu, load.ok200, side);
      const redisPerAllocation = side !== 'reference' && redis && load.ok200 ? redis.commands / load.ok200 : undefined;
      ctx.log(
        `open-loop ${side} ${rate}/s: ${load.ok200}/${load.due} × 200, p50 ${formatValue(load.latency.p50, 'ms')}, p99 ${formatValue(load.latency.p99, 'ms')}; CPU ${cores.toFixed(2)} cores, ${formatValue(perAllocation, 'ms')} per allocation${redisPerAllocation === undefined ? '' : `, ${redisPerAllocation.toFixed(1)} Redis commands per allocation`}${s.sustained ? '' : ` — not sustained: ${s.why}`}`,
      );
      if (!s.sustained) break;
    }
  } finally {
    await pool.close();
  }
  // The ledger checks, over every request of the ladder (its steps share the quests).
  const all: LoadResult = {
    ...runs[0]!,
    sent: sum(runs, (l) => l.sent),
    received: sum(runs, (l) => l.received),
    ok200: sum(runs, (l) => l.ok200),
    accepted202: sum(runs, (l) => l.accepted202),
    errors: sum(runs, (l) => l.errors),
    timeouts: sum(runs, (l) => l.timeouts),
    otherStatus: {},
    payoutIds: runs.flatMap((l) => l.payoutIds),
    sampleErrors: [],
  };
  const verdicts = [side === 'service' ? await verifyLoad(ctx, quests, all) : await verifySide(ctx, side, quests, all)];
  const best = [...steps].reverse().find((s) => s.sustained);
  const failed = steps.find((s) => !s.sustained);
  return { steps, best, failed, verdicts };
}

const sum = <T>(list: readonly T[], f: (t: T) => number) => list.reduce((a, t) => a + f(t), 0);

type Ladder = Awaited<ReturnType<typeof ladder>>;

const stepsNote = (side: string, l: Ladder) =>
  `open-loop (${side}): ${l.steps.map((s) => `${s.rate}/s p99 ${formatValue(s.load.latency.p99, 'ms')}${s.sustained ? '' : ' ✗'}`).join(', ')}`;

const firstFailed = (l: Ladder) => (l.failed ? `${l.failed.rate}/s: ${l.failed.why}` : `none up to ${l.steps.at(-1)?.rate}/s`);

export async function openLoopScenario(ctx: Ctx): Promise<ScenarioOutput> {
  ctx.log(
    `open-loop: constant arrival rate over ${ctx.cfg.throughputQuests} quests from ${START}/s, ×${STEP} per ${ctx.cfg.openLoopStepS} s step, until p99 > ${OPEN_LOOP_P99_LIMIT_MS} ms or a request is not answered 200`,
  );
  const service = { baseUrl: ctx.api.baseUrl, apiKey: ctx.owner.apiKey, ownerId: ctx.owner.ownerId, sql: ctx.infra.sql };
  const svc = await ladder(ctx, 'service', service, 31);
  const refSide = comparedSide(ctx, 'reference');
  const ref = refSide ? await ladder(ctx, 'reference', refSide, 32) : undefined;
  const peerSide = comparedSide(ctx, 'peer');
  const peer = peerSide ? await ladder(ctx, 'peer', peerSide, 33) : undefined;
  const notes = [
    stepsNote('service', svc),
    ...(ref ? [stepsNote('reference', ref)] : []),
    ...(peer ? [stepsNote('peer', peer)] : []),
  ];
  // A step that was not sustained may still have answered everything it got right: the checks
  // of the ledger (verifyLoad) count against the verdict, its speed does not.
  const ledgerVerdicts = [...svc.verdicts, ...(ref?.verdicts ?? []), ...(peer?.verdicts ?? [])].map((v) => ({
    ...v,
    reasons: v.reasons.filter((r) => !/non-2xx|connection errors|^e\.g\./.test(r)),
  }));
  const sideRows = (side: string, l: Ladder | undefined) =>
    l ? [{ metric: `first rate not sustained (${side})`, unit: 'text' as const, service: firstFailed(l), limit: undefined }] : [];
  return finish(
    ctx,
    'open-loop',
    ledgerVerdicts.map((v) => ({ ...v, ok: v.reasons.length === 0 })),
    [
      {
        metric: `highest sustained rate (p99 ≤ ${OPEN_LOOP_P99_LIMIT_MS} ms, all 200)`,
        unit: '/s',
        service: svc.best?.rate ?? 0,
        limit: undefined,
        reference: ref ? (ref.best?.rate ?? 0) : undefined,
        peer: peer ? (peer.best?.rate ?? 0) : undefined,
      },
      {
        metric: 'p99 at that rate',
        unit: 'ms',
        service: svc.best?.load.latency.p99 ?? null,
        limit: undefined,
        reference: ref ? (ref.best?.load.latency.p99 ?? null) : undefined,
        peer: peer ? (peer.best?.load.latency.p99 ?? null) : undefined,
      },
      { metric: 'first rate not sustained', unit: 'text', service: firstFailed(svc), limit: undefined },
      ...sideRows('reference', ref),
      ...sideRows('peer', peer),
    ],
    { service: svc.steps, reference: ref?.steps, peer: peer?.steps },
    notes,
  );
}
