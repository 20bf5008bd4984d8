/**
 * Several batches in flight, in the quest's order.
 *
 * The service decides a quest's batches in the order they were ENQUEUED (the partition queue's
 * order), not the order their requests arrived: two POSTs sent together are enqueued in whichever
 * order their validation and inserts finish. So batch k+1 is POSTed only once the service has
 * answered batch k's POST — 200 (decided) or 202 (enqueued) — while the results of up to
 * `concurrency` accepted batches are awaited together. Results are followed and recorded strictly
 * in batch order (batch k+1 cannot be decided before batch k anyway), so only the oldest batch is
 * polled and only its stall timer runs.
 *
 * The source (the rows being read and cut into batches) is pulled only when a slot is free: one
 * pass over the input, the next batch read while earlier ones are on the wire.
 */

export interface PipelineSteps<B, A, R> {
  /** Batches accepted and not yet recorded, at most (≥ 1; 1 = one batch at a time). */
  concurrency: number;
  /** Send batch b; resolve once the service has taken it. Called in batch order, each after the previous resolved. */
  submit(b: B): Promise<A>;
  /** Collect batch b's results. Called in batch order, each after the previous one was recorded. */
  follow(b: B, accepted: A): Promise<R>;
  /** Record batch b's results. Called in batch order. */
  record(b: B, result: R): Promise<void>;
  /** Checked before each new batch is submitted; throw to stop (e.g. the abort reason). */
  check?(): void;
}

const ignore = () => {};

/**
 * Run the batches of `source` through submit → follow → record. On the first failure nothing new
 * is submitted and that failure is thrown once the batches before it have been recorded (a
 * failing source — a malformed line of the caller's file — lets the batches already accepted finish first).
 */
export async function runInOrder<B, A, R>(source: AsyncIterable<B>, steps: PipelineSteps<B, A, R>): Promise<void> {
  const window: Promise<void>[] = [];
  let stopped: unknown;
  let lastAccepted: Promise<unknown> = Promise.resolve();
  let lastRecorded: Promise<void> = Promise.resolve();
  try {
    for await (const b of source) {
      if (window.length >= Math.max(1, steps.concurrency)) await window.shift();
      steps.check?.();
      const accepted = lastAccepted.then(() => {
        if (stopped !== undefined) throw stopped;
        steps.check?.();
        return steps.submit(b);
      });
      const recorded = Promise.all([accepted, lastRecorded]).then(async ([a]) => steps.record(b, await steps.follow(b, a)));
      recorded.catch((error: unknown) => {
        stopped ??= error;
      });
      lastAccepted = accepted;
      lastAccepted.catch(ignore);
      lastRecorded = recorded;
      window.push(recorded);
    }
  } catch (error) {
    // The source failed (or the head batch did, seen through window.shift()): let what was already
    // accepted finish and be recorded, in order, before reporting the first failure.
    stopped ??= error;
    for (const p of window) await p.catch(ignore);
    throw stopped;
  }
  for (const p of window) await p;
}
