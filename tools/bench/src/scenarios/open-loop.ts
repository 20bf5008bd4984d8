import type { Ctx, ScenarioOutput, Verdict } from '../context.ts';
import type { LoadResult } from '../http-load.ts';
import { measured } from '../measure.ts';
import { runOpenLoop } from '../open-loop.ts';
import { seedQuests } from '../seed.ts';
import { formatValue, rng } from '../stats.ts';
import { finish, lean, sumValues, verifyLoad } from '../verify.ts';

/**
 * Open loop (`open-loop.ts`): allocations arrive at a constant rate over 1,000 quests, stepped up
 * by STEP× from START/s, each step `openLoopStepS` seconds on quests of its own, until a step is not
 * sustained — every request answered 200 and p99 (from each request's due time) ≤ P99_LIMIT_MS.
 * Then the same ladder on the reference service. Reported: the highest sustained rate of each side
 * and its p99, and the first rate that was not sustained.
 */

export const OPEN_LOOP_P99_LIMIT_MS = 100;
const START = 200;
const STEP = 1.25;
const MAX_STEPS = 16;

interface Step {
  rate: number;
  load: Omit<LoadResult, 'payoutIds'> & { payoutIdCount: number; due: number };
  sustained: boolean;
  why: string;
  cpu: Record<string, number>;
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

async function ladder(ctx: Ctx, side: 'service' | 'reference', baseUrl: string, seed: number) {
  const steps: Step[] = [];
  const verdicts: Verdict[] = [];
  const r = rng(seed);
  let rate = START;
  for (let i = 0; i < MAX_STEPS; i++, rate = Math.round(rate * STEP)) {
    const quests = await seedQuests(ctx.infra.sql, ctx.owner.ownerId, ctx.cfg.throughputQuests, `open-${side}-${rate}`);
    const pick = () => ({
      questId: quests[Math.floor(r() * quests.length)]!,
      address: ctx.accounts[Math.floor(r() * ctx.cfg.accountPool)]!,
    });
    // Enough connections for every request due within 4 × the p99 limit: fewer would make the load
    // wait for connections, which the latency counts anyway (from each request's due time).
    const connections = Math.min(1024, Math.max(32, Math.ceil((rate * 4 * OPEN_LOOP_P99_LIMIT_MS) / 1000)));
    const { result: load, cpu } = await measured(ctx, `open-loop ${side} ${rate}/s`, () =>
      runOpenLoop({ baseUrl, apiKey: ctx.owner.apiKey, rate, durationS: ctx.cfg.openLoopStepS, connections, pick }),
    );
    verdicts.push(await verifyLoad(ctx, quests, load));
    const s = sustainedStep(load);
    steps.push({ rate, load: lean(load), cpu, ...s });
    ctx.log(
      `open-loop ${side} ${rate}/s: ${load.ok200}/${load.due} × 200, p50 ${formatValue(load.latency.p50, 'ms')}, p99 ${formatValue(load.latency.p99, 'ms')}${s.sustained ? '' : ` — not sustained: ${s.why}`}`,
    );
    if (!s.sustained) break;
  }
  const best = [...steps].reverse().find((s) => s.sustained);
  const failed = steps.find((s) => !s.sustained);
  return { steps, best, failed, verdicts };
}

export async function openLoopScenario(ctx: Ctx): Promise<ScenarioOutput> {
  ctx.log(
    `open-loop: constant arrival rate over ${ctx.cfg.throughputQuests} quests from ${START}/s, ×${STEP} per ${ctx.cfg.openLoopStepS} s step, until p99 > ${OPEN_LOOP_P99_LIMIT_MS} ms or a request is not answered 200`,
  );
  const svc = await ladder(ctx, 'service', ctx.api.baseUrl, 31);
  const ref = ctx.reference ? await ladder(ctx, 'reference', ctx.reference.baseUrl, 32) : undefined;
  const notes = [
    `open-loop (service): ${svc.steps.map((s) => `${s.rate}/s p99 ${formatValue(s.load.latency.p99, 'ms')}${s.sustained ? '' : ' ✗'}`).join(', ')}`,
    ...(ref
      ? [
          `open-loop (reference): ${ref.steps.map((s) => `${s.rate}/s p99 ${formatValue(s.load.latency.p99, 'ms')}${s.sustained ? '' : ' ✗'}`).join(', ')}`,
        ]
      : []),
  ];
  // A step that was not sustained may still have answered everything it got right: the checks
  // of the ledger (verifyLoad) count against the verdict, its speed does not.
  const ledgerVerdicts = [...svc.verdicts, ...(ref?.verdicts ?? [])].map((v) => ({
    ...v,
    reasons: v.reasons.filter((r) => !/non-2xx|connection errors|^e\.g\./.test(r)),
  }));
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
      },
      {
        metric: 'p99 at that rate',
        unit: 'ms',
        service: svc.best?.load.latency.p99 ?? null,
        limit: undefined,
        reference: ref ? (ref.best?.load.latency.p99 ?? null) : undefined,
      },
      {
        metric: 'first rate not sustained',
        unit: 'text',
        service: svc.failed ? `${svc.failed.rate}/s: ${svc.failed.why}` : `none up to ${svc.steps.at(-1)?.rate}/s`,
        limit: undefined,
      },
      ...(ref
        ? [
            {
              metric: 'first rate not sustained (reference)',
              unit: 'text' as const,
              service: ref.failed ? `${ref.failed.rate}/s: ${ref.failed.why}` : `none up to ${ref.steps.at(-1)?.rate}/s`,
              limit: undefined,
            },
          ]
        : []),
    ],
    { service: svc.steps, reference: ref?.steps },
    notes,
  );
}
