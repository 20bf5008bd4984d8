import type { AllocateJobData, AllocateJobResult, JobContext, RequestItem, RequestOutcome } from '@quest/domain';
import { applyRequests, markAllocationsFailed } from '@quest/db';
import { decisionSeconds, jobItems } from '../metrics.ts';
import { type HandlerDeps, withRetry } from './retry.ts';

const FAILED: RequestOutcome = { status: 'failed', code: 'ALLOCATION_FAILED' };

async function giveUp(deps: HandlerDeps, items: readonly RequestItem[], signal?: AbortSignal): Promise<RequestOutcome> {
  // The marker says failed (unless an outcome exists), so a client answered 202 sees it and may
  // retry with the same key; written with the same patience as the ledger itself.
  await withRetry(
    deps,
    { keys: items.map((i) => i.key) },
    () =>
      markAllocationsFailed(
        deps.sql,
        items.map((i) => ({ ...i, enqueuedAt: i.enqueuedAt ?? 0 })),
      ),
    signal,
  );
  return FAILED;
}

/**
 * The decision's metrics and its log line: the request ids of its items (the API's x-request-id),
 * so one grep of a request id finds both the HTTP line and the decision.
 */
function recordDecision(
  deps: HandlerDeps,
  job: JobContext,
  items: readonly RequestItem[],
  result: AllocateJobResult,
  startedAt: number,
) {
  const now = Date.now();
  jobItems.observe(items.length);
  for (const item of items) if (item.enqueuedAt) decisionSeconds.observe(Math.max(0, now - item.enqueuedAt) / 1000);
  const outcomes: Record<string, number> = {};
  for (const o of result.outcomes) outcomes[o.status] = (outcomes[o.status] ?? 0) + 1;
  deps.logger.info?.(
    {
      jobId: job.id,
      partition: job.partition,
      items: items.length,
      requestIds: items.map((i) => i.requestId ?? null),
      outcomes,
      durationMs: now - startedAt,
    },
    'allocations decided',
  );
}

/**
 * Decide an `allocate` job: its items — allocations and reversals, one request or several
 * coalesced — in one ledger transaction, in order. A permanent error fails only the item that
 * causes it.
 */
export async function handleAllocate(deps: HandlerDeps, data: AllocateJobData, job: JobContext): Promise<AllocateJobResult> {
  const startedAt = Date.now();
  const { items } = data;
  const done = (result: AllocateJobResult) => {
    recordDecision(deps, job, items, result, startedAt);
    return result;
  };
  // On a job's first delivery and first try, only client-keyed items can have a stored outcome; a
  // redelivered job (its worker died), or any retry (a commit may have landed), reads them all.
  const outcomes = await withRetry(
    deps,
    { jobId: job.id, items: items.length },
    (retry) => applyRequests(deps.sql, items, { firstDelivery: job.firstDelivery && !retry }),
    job.signal,
  );
  if (outcomes) return done({ outcomes, worker: deps.workerId });
  if (items.length === 1) return done({ outcomes: [await giveUp(deps, items, job.signal)], worker: deps.workerId });
  // A coalesced job carries other clients' requests: one item that cannot be applied must not fail
  // them all. Apply the items one by one, still in order, so only the culprit fails.
  const single: RequestOutcome[] = [];
  for (const item of items) {
    const [outcome] =
      (await withRetry(
        deps,
        { jobId: job.id, key: item.key },
        () => applyRequests(deps.sql, [item], { firstDelivery: false }),
        job.signal,
      )) ?? [];
    single.push(outcome ?? (await giveUp(deps, [item], job.signal)));
  }
  return done({ outcomes: single, worker: deps.workerId });
}
