import { QuestError } from '../errors.ts';
import { backoffMs, sleep } from '../retry.ts';
import type { RetryEvent, Transport } from '../transport.ts';
import type { Batch, BatchResult } from '../types.ts';

/**
 * One batch on the wire: `submit` POSTs it (the service has taken it, i.e. enqueued it in the
 * quest's order, once this resolves), `follow` collects one result per item, in item order.
 */

export interface StallPolicy {
  /** A batch showing no progress for this long is POSTed again with the same key. */
  timeoutMs: number;
  /** Stalls of one batch before creditMany stops (STALLED). */
  tries: number;
}

export interface Accepted {
  batch: Batch;
  /** The request body, kept for a stall's or a failure's re-POST with the same key. */
  body: string;
  /**
   * Items decided before this run asked for the batch: an earlier run's request created it (the
   * answer to this run's first POST carried `Idempotent-Replayed: true`), and the service had
   * decided this many of its items by then. Their results are replays, credited before.
   */
  replayedBelow: number;
}

/** Results per page when following a 202 (the API's maximum). */
export const RESULTS_PAGE_SIZE = 1000;

/**
 * Polls of a batch in progress: from POLL_MIN_MS, ×1.5 per unchanged answer, up to POLL_BUSY_MS
 * while the batch moved within the last POLL_IDLE_AFTER_MS, then up to POLL_MAX_MS. Only the
 * oldest batch is polled, and the batches behind it are already queued, so a late look delays
 * only the caller's bookkeeping, not the service; every poll costs the API a request.
 */
const POLL_MIN_MS = 50;
const POLL_BUSY_MS = 250;
const POLL_IDLE_AFTER_MS = 5000;
const POLL_MAX_MS = 1000;

/** The batch of a 2xx answer, checked for the fields this code relies on (a proxy's page is not one). */
function batchOf(data: { batch?: Batch } | undefined, key: string): Batch {
  const b = data?.batch;
  if (
    !b ||
    typeof b.id !== 'string' ||
    typeof b.total !== 'number' ||
    typeof b.processed !== 'number' ||
    typeof b.status !== 'string'
  )
    throw new QuestError('BAD_RESPONSE', 'an answer without the batch the API documents', {
      retryable: false,
      idempotencyKey: key,
    });
  return b;
}

export interface BatchHooks {
  onRetry(event: RetryEvent): void;
  /** A stalled batch is about to be sent again. */
  onStall(idleMs: number, stalls: number): void;
}

export interface BatchSenderOptions {
  /** Ask for a 202 as soon as the batch is enqueued (`Prefer: respond-async`). */
  respondAsync: boolean;
  stall: StallPolicy;
  signal: AbortSignal;
}

export class BatchSender {
  private readonly t: Transport;
  private readonly questId: number;
  private readonly o: BatchSenderOptions;

  constructor(t: Transport, questId: number, o: BatchSenderOptions) {
    this.t = t;
    this.questId = questId;
    this.o = o;
  }

  private async post(key: string, body: string, hooks: BatchHooks, onAttempt?: (r: Response | null) => void): Promise<Batch> {
    const { t, questId } = this;
    const answer = await t.call(
      'createBatch',
      (signal) =>
        t.api.POST('/quests/{questId}/batches', {
          params: {
            path: { questId },
            header: { 'idempotency-key': key, ...(this.o.respondAsync ? { prefer: 'respond-async' } : {}) },
          },
          // Serialized once per batch (see submit), whatever the number of attempts.
          body: { allocations: [] },
          bodySerializer: () => body,
          signal,
        }),
      { signal: this.o.signal, idempotencyKey: key, onAttempt, onRetry: hooks.onRetry },
    );
    return batchOf(t.ok(answer, 'createBatch', key), key);
  }

  /**
   * POST the batch (retrying transient failures with the same key). Resolves once the service
   * answered 200 (decided) or 202 (enqueued); throws QuestError for a 4xx.
   */
  async submit(key: string, items: { address: string; points: number }[], hooks: BatchHooks): Promise<Accepted> {
    const body = JSON.stringify({ allocations: items });
    // Only the first attempt tells whether an EARLIER run created the batch: a retry's answer is
    // marked replayed when this run's own first attempt reached the service unanswered.
    let earlierRun: boolean | undefined;
    const batch = await this.post(key, body, hooks, (r) => {
      earlierRun ??= r?.headers.get('idempotent-replayed') === 'true';
    });
    const replayedBelow = earlierRun ? (batch.status === 'completed' ? batch.total : batch.processed) : 0;
    return { batch, body, replayedBelow };
  }

  /**
   * Collect the batch's results: from the POST's answer when it carried them, else by GETting the
   * batch, paging results as they are decided. A batch the service reports failed is POSTed again
   * with the same key, which resumes it after its last committed chunk; one that shows no progress
   * for the stall timeout is POSTed again too, and after `tries` stalls creditMany stops.
   */
  async follow(
    accepted: Accepted,
    key: string,
    count: number,
    hooks: BatchHooks,
    onProcessed: (n: number) => void,
  ): Promise<BatchResult[]> {
    const { t, questId } = this;
    const { stall, signal } = this.o;
    let { batch } = accepted;
    const results: BatchResult[] = [];
    let resumes = 0;
    let delay = POLL_MIN_MS;
    let mark = '';
    let markedAt = Date.now();
    let stalls = 0;
    for (;;) {
      const now = Date.now();
      const seen = `${batch.status}|${batch.processed}|${batch.updated_at}|${results.length}`;
      if (seen !== mark) {
        mark = seen;
        markedAt = now;
        delay = POLL_MIN_MS;
      } else if (batch.status !== 'completed' && batch.status !== 'failed' && now - markedAt >= stall.timeoutMs) {
        const idleMs = now - markedAt;
        if (++stalls >= stall.tries)
          throw new QuestError('STALLED', `no progress for ${Math.round(idleMs / 1000)} s, ${stalls} times`, {
            retryable: true,
            idempotencyKey: key,
            attempts: stalls,
          });
        hooks.onStall(idleMs, stalls);
        batch = await this.post(key, accepted.body, hooks);
        markedAt = Date.now();
        continue;
      }
      if (batch.total !== count)
        throw new QuestError('BAD_RESPONSE', `the API reports ${batch.total} items, ${count} were sent`, {
          retryable: false,
          idempotencyKey: key,
        });
      const before = results.length;
      for (const r of batch.results ?? []) {
        if (r.index === results.length) results.push(r);
        else if (r.index > results.length) break; // a gap: fetch from results.length again
      }
      onProcessed(Math.max(results.length, Math.min(batch.processed, count)));
      if (batch.status === 'completed' && results.length >= count) return results;
      if (batch.status === 'failed') {
        if (++resumes >= t.policy.maxAttempts)
          throw new QuestError('ALLOCATION_FAILED', `the batch failed ${resumes} times`, {
            retryable: true,
            idempotencyKey: key,
            attempts: resumes,
          });
        await sleep(backoffMs(resumes, undefined, t.policy), signal);
        batch = await this.post(key, accepted.body, hooks);
        continue;
      }
      // Decided results still to page: ask at once. Nothing new (or only undecided ones): wait first.
      if (results.length === before || results.length >= Math.min(batch.processed, count)) {
        await sleep(delay, signal);
        const cap = Date.now() - markedAt < POLL_IDLE_AFTER_MS ? POLL_BUSY_MS : POLL_MAX_MS;
        delay = Math.min(cap, Math.round(delay * 1.5));
      }
      const offset = results.length;
      const answer = await t.call(
        'getBatch',
        (s) =>
          t.api.GET('/quests/{questId}/batches/{batchId}', {
            params: { path: { questId, batchId: batch.id }, query: { limit: RESULTS_PAGE_SIZE, offset } },
            signal: s,
          }),
        { signal, idempotencyKey: key, onRetry: hooks.onRetry },
      );
      batch = batchOf(t.ok(answer, 'getBatch', key), key);
    }
  }
}
