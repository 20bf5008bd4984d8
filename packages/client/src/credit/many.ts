import { QuestError } from '../errors.ts';
import { type Overrides, withDefaults } from '../retry.ts';
import type { RetryEvent, Transport } from '../transport.ts';
import type { BatchResult, ErrorCode, Payout } from '../types.ts';
import { type Accepted, BatchSender, type StallPolicy } from './batch.ts';
import { runInOrder } from './pipeline.ts';
import { batchKey, type PlannedBatch, planBatches, type RowSource } from './plan.ts';
import type { CreditRow } from './rows.ts';
import { type CreditState, startState } from './state.ts';

/** A batch as creditMany sent it. */
export interface BatchInfo<R> {
  /** Ordinal in the run (0-based; a resumed run continues the numbering). */
  index: number;
  idempotencyKey: string;
  /** Its rows, in input order (valid rows only). */
  rows: readonly R[];
}

/** What became of one input row. `replayed`: credited (or rejected) by an earlier run, not this one. */
export type CreditRowResult<R> =
  | { row: R; status: 'credited'; payout: Payout; replayed: boolean }
  | { row: R; status: 'rejected'; code: ErrorCode; message: string; replayed: boolean }
  | { row: R; status: 'invalid'; reason: string };

export interface CreditBatchReport<R> {
  /** The batch these results are of; null for invalid rows that trail the last batch. */
  batch: BatchInfo<R> | null;
  /** One per input row the report covers, in input order (invalid rows before the batch included). */
  results: CreditRowResult<R>[];
  /** Store this once the results are handled: a resume starts after this report. */
  state: CreditState;
}

export type CreditEvent<R> =
  /** The service has taken the batch: it holds its place in the quest's order. */
  | { type: 'accepted'; batch: BatchInfo<R> }
  /** Items of the batch decided so far. */
  | { type: 'progress'; batch: BatchInfo<R>; processed: number }
  | { type: 'retry'; batch: BatchInfo<R>; retry: RetryEvent }
  /** The batch showed no progress for `idleMs`: it is sent again with its key (stall `stalls` of `maxStalls`). */
  | { type: 'stall'; batch: BatchInfo<R>; idleMs: number; stalls: number; maxStalls: number };

export interface CreditManyOptions<R> {
  /** Valid rows per batch, 1–10,000 (the API's BATCH_MAX_ITEMS default). Default 1,000. */
  batchSize?: number | undefined;
  /** Batches in flight (taken by the service, results not yet reported), 1–64. Default 4. */
  concurrency?: number | undefined;
  /** Prefix of the batches' Idempotency-Keys; default random, kept in the state. */
  keyPrefix?: string | undefined;
  /** Resume: the last state reported (or given to onState) by an earlier run over the same rows. */
  state?: CreditState | undefined;
  /** Called with the state before anything is sent, and after each report is handled: store it. */
  onState?: ((state: CreditState) => void | Promise<void>) | undefined;
  onEvent?: ((event: CreditEvent<R>) => void) | undefined;
  stall?: Overrides<StallPolicy> | undefined;
  signal?: AbortSignal | undefined;
}

/** A failure of one batch: `batch` says which (its rows, its key); the rest is the QuestError's. */
export class CreditBatchError<R> extends QuestError {
  override readonly name = 'CreditBatchError';
  readonly batch: BatchInfo<R>;

  constructor(cause: QuestError, batch: BatchInfo<R>) {
    super(cause.code, cause.message, { ...cause, cause });
    this.batch = batch;
  }
}

export const DEFAULT_CREDIT_BATCH_SIZE = 1000;
export const MAX_CREDIT_BATCH_SIZE = 10_000;
export const DEFAULT_CREDIT_CONCURRENCY = 4;
export const MAX_CREDIT_CONCURRENCY = 64;
export const DEFAULT_STALL: StallPolicy = { timeoutMs: 60_000, tries: 3 };

/**
 * Hands each report from the pipeline to the caller's loop, and holds the pipeline until the caller
 * has handled it (asked for the next one): the state a caller stores never runs ahead of the
 * results it has seen.
 */
class Handoff<T> {
  private readonly queue: { value: T; handled: () => void }[] = [];
  private wake: (() => void) | undefined;
  private ended = false;
  private failure: { error: unknown } | undefined;

  put(value: T, signal: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal.aborted) return reject(signal.reason);
      const onAbort = () => reject(signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
      this.queue.push({
        value,
        handled: () => {
          signal.removeEventListener('abort', onAbort);
          resolve();
        },
      });
      this.wake?.();
    });
  }

  end(): void {
    this.ended = true;
    this.wake?.();
  }

  fail(error: unknown): void {
    this.failure = { error };
    this.wake?.();
  }

  async take(): Promise<{ value: T; handled: () => void } | undefined> {
    while (this.queue.length === 0 && !this.ended && !this.failure) await new Promise<void>((r) => (this.wake = r));
    this.wake = undefined;
    const item = this.queue.shift();
    if (item) return item;
    if (this.failure) throw this.failure.error;
    return undefined;
  }
}

function resultsOf<R>(b: PlannedBatch<R>, results: readonly BatchResult[], replayedBelow: number): CreditRowResult<R>[] {
  const out: CreditRowResult<R>[] = [];
  let i = 0;
  for (let k = 0; k < b.rows.length; k++) {
    while (i < b.invalid.length && b.invalid[i]!.position < b.positions[k]!) {
      const { row, reason } = b.invalid[i++]!;
      out.push({ row, status: 'invalid', reason });
    }
    const r = results[k]!;
    const row = b.rows[k]!;
    const replayed = k < replayedBelow;
    if (r.status === 'completed' && r.payout) out.push({ row, status: 'credited', payout: r.payout, replayed });
    else if (r.status === 'rejected' && r.error)
      out.push({ row, status: 'rejected', code: r.error.code, message: r.error.message, replayed });
    else {
      const missing = r.status === 'completed' ? 'payout' : 'error';
      throw new QuestError('BAD_RESPONSE', `result ${k} is ${r.status} without its ${missing}`, { retryable: false });
    }
  }
  for (; i < b.invalid.length; i++) out.push({ row: b.invalid[i]!.row, status: 'invalid', reason: b.invalid[i]!.reason });
  return out;
}

function checkRange(name: string, value: number, min: number, max: number): number {
  if (!Number.isInteger(value) || value < min || value > max)
    throw new RangeError(`${name} must be an integer from ${min} to ${max}`);
  return value;
}

/**
 * Credit `rows` to a quest through the batch endpoint, in input order, exactly once per row however
 * often the run is resumed or repeated with the same state or keyPrefix. Yields one report per
 * batch, in order; throws CreditBatchError when a batch cannot be credited (after reporting every
 * batch before it), the source's own error, or the abort reason.
 *
 * Several batches are in flight, each POSTed once the service has taken the one before (so the
 * quest's order is the input's order; see pipeline.ts), with `Prefer: respond-async` so that
 * happens as soon as it is queued.
 */
export async function* creditMany<R extends CreditRow>(
  t: Transport,
  questId: number,
  rows: RowSource<R>,
  o: CreditManyOptions<R> = {},
): AsyncGenerator<CreditBatchReport<R>, void, undefined> {
  if (o.batchSize !== undefined) checkRange('batchSize', o.batchSize, 1, MAX_CREDIT_BATCH_SIZE);
  const concurrency = checkRange('concurrency', o.concurrency ?? DEFAULT_CREDIT_CONCURRENCY, 1, MAX_CREDIT_CONCURRENCY);
  let state = startState(questId, o, DEFAULT_CREDIT_BATCH_SIZE);
  const { batchSize, keyPrefix } = state;
  const stall = withDefaults(DEFAULT_STALL, o.stall);
  await o.onState?.(state);

  const stop = new AbortController();
  const signal = o.signal ? AbortSignal.any([o.signal, stop.signal]) : stop.signal;
  const sender = new BatchSender(t, questId, { respondAsync: concurrency > 1, stall, signal });
  const emit = o.onEvent ?? (() => {});
  const hooks = (batch: BatchInfo<R>) => ({
    onRetry: (retry: RetryEvent) => emit({ type: 'retry', batch, retry }),
    onStall: (idleMs: number, stalls: number) => emit({ type: 'stall', batch, idleMs, stalls, maxStalls: stall.tries - 1 }),
  });
  const failed = (error: unknown, batch: BatchInfo<R>) =>
    error instanceof QuestError && !signal.aborted ? new CreditBatchError(error, batch) : error;
  type Sent = { info: BatchInfo<R>; accepted: Accepted } | null;
  type Followed = { info: BatchInfo<R>; accepted: Accepted; results: BatchResult[] } | null;

  const handoff = new Handoff<CreditBatchReport<R>>();
  const run = runInOrder<PlannedBatch<R>, Sent, Followed>(
    planBatches(rows, { batchSize, skipRows: state.rowsDone, firstIndex: state.batchesDone }),
    {
      concurrency,
      check: () => signal.throwIfAborted(),
      submit: async (b) => {
        if (b.rows.length === 0) return null;
        const info: BatchInfo<R> = { index: b.index, idempotencyKey: batchKey(keyPrefix, b.index, batchSize), rows: b.rows };
        const items = b.rows.map((row, k) => ({ address: row.address, points: b.points[k]! }));
        try {
          const accepted = await sender.submit(info.idempotencyKey, items, hooks(info));
          emit({ type: 'accepted', batch: info });
          return { info, accepted };
        } catch (error) {
          throw failed(error, info);
        }
      },
      follow: async (b, sent) => {
        if (!sent) return null;
        const { info, accepted } = sent;
        try {
          const results = await sender.follow(accepted, info.idempotencyKey, b.rows.length, hooks(info), (processed) =>
            emit({ type: 'progress', batch: info, processed }),
          );
          return { info, accepted, results };
        } catch (error) {
          throw failed(error, info);
        }
      },
      record: async (b, done) => {
        state = { ...state, rowsDone: b.rowsTo, batchesDone: state.batchesDone + (done ? 1 : 0) };
        const results = done ? resultsOf(b, done.results, done.accepted.replayedBelow) : resultsOf(b, [], 0);
        await handoff.put({ batch: done?.info ?? null, results, state }, signal);
      },
    },
  );
  run.then(
    () => handoff.end(),
    (error: unknown) => handoff.fail(error),
  );
  // The state of the report the caller holds: leaving the loop while holding it (break, return,
  // throw) counts it as handled, as asking for the next one does.
  let held: CreditState | undefined;
  try {
    for (;;) {
      const next = await handoff.take();
      if (!next) return;
      held = next.value.state;
      yield next.value;
      held = undefined;
      await o.onState?.(next.value.state);
      next.handled();
    }
  } finally {
    // The caller stopped early or the run ended: nothing more is sent, and requests in flight are
    // abandoned. Batches the service had taken are still decided; a resume replays them.
    stop.abort(new Error('creditMany stopped'));
    await run.catch(() => {});
    if (held) await o.onState?.(held);
  }
}
