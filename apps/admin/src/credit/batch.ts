import { setTimeout as sleep } from 'node:timers/promises';
import { type Api, type BatchAnswer, type BatchItemResult, backoffMs, CreditStop, MAX_ATTEMPTS, parseAnswer } from './api.ts';
import { formatDuration } from './progress.ts';
import type { CreditItem } from './rows.ts';

/**
 * One batch on the wire: `submit` POSTs it (the service has taken it, i.e. enqueued it in the
 * quest's order, once this resolves), `follow` collects one result per item, in item order.
 */

export interface StallPolicy {
  /** A batch showing no progress for this long is POSTed again with the same key. */
  timeoutMs: number;
  /** Stalls of one batch before the run stops. */
  tries: number;
}

export interface Accepted {
  answer: BatchAnswer;
  location: string;
  /** The request body, kept for a resume or a stall's re-POST with the same key. */
  body: string;
  /**
   * Items decided before this run asked for the batch: an earlier run's request created it (the
   * answer to this run's first POST carried `Idempotent-Replayed: true`), and the service had
   * processed this many of its items by then. Their results are replays, credited before.
   */
  replayedBelow: number;
}

/**
 * Polls of a batch in progress: from POLL_MIN_MS, ×1.5 per unchanged answer, up to POLL_BUSY_MS
 * while the batch moved within the last POLL_IDLE_AFTER_MS, then up to POLL_MAX_MS. Only the
 * oldest batch is polled, and the batches behind it are already queued, so a late look delays
 * only this run's bookkeeping, not the service; every poll costs the API a request.
 */
const POLL_MIN_MS = 50;
const POLL_BUSY_MS = 250;
const POLL_IDLE_AFTER_MS = 5000;
const POLL_MAX_MS = 1000;

export class BatchClient {
  constructor(
    private readonly api: Api,
    private readonly questId: number,
    private readonly o: {
      /** Ask the API to answer 202 as soon as the batch is enqueued (`Prefer: respond-async`). */
      respondAsync: boolean;
      stall: StallPolicy;
    },
  ) {}

  private async post(key: string, body: string, label: string, onAttempt?: (h: Headers | null) => void) {
    const headers: Record<string, string> = { 'idempotency-key': key };
    if (this.o.respondAsync) headers.prefer = 'respond-async';
    const res = await this.api.request(label, 'POST', this.api.url(`/quests/${this.questId}/batches`), {
      body,
      headers,
      onAttempt,
    });
    const answer = parseAnswer(res.json, label);
    const location = res.headers.get('location') ?? `/quests/${this.questId}/batches/${answer.id}`;
    return { answer, location };
  }

  /**
   * POST the batch (retrying transient failures with the same key). Resolves once the service
   * answered: 200 (decided), or 202 (enqueued). Throws Refused for a 4xx.
   */
  async submit(key: string, items: readonly CreditItem[], label: string): Promise<Accepted> {
    const body = JSON.stringify({ allocations: items.map((i) => ({ address: i.address, points: i.points })) });
    // Only the first attempt tells whether an EARLIER run created the batch: a retry's answer is
    // marked replayed when this run's own first attempt reached the service unanswered.
    let earlierRun: boolean | undefined;
    const { answer, location } = await this.post(key, body, label, (h) => {
      earlierRun ??= h?.get('idempotent-replayed') === 'true';
    });
    const replayedBelow = earlierRun ? (answer.status === 'completed' ? answer.total : answer.processed) : 0;
    return { answer, location, body, replayedBelow };
  }

  /**
   * Collect the batch's results: from the POST's answer when it carried them, else by following the
   * Location, paging results as they are decided. A batch the service reports failed is POSTed
   * again with the same key, which resumes it after its last committed chunk; one that shows no
   * progress for the stall timeout is POSTed again too, and after `tries` stalls the run stops.
   */
  async follow(
    accepted: Accepted,
    key: string,
    items: readonly CreditItem[],
    label: string,
    onProcessed: (n: number) => void,
  ): Promise<BatchItemResult[]> {
    const { api } = this;
    const stall = this.o.stall;
    let { answer, location } = accepted;
    const results: BatchItemResult[] = [];
    let resumes = 0;
    let delay = POLL_MIN_MS;
    let mark = '';
    let markedAt = Date.now();
    let stalls = 0;
    for (;;) {
      const now = Date.now();
      const seen = `${answer.status}|${answer.processed}|${answer.updated_at ?? ''}|${results.length}`;
      if (seen !== mark) {
        mark = seen;
        markedAt = now;
        delay = POLL_MIN_MS;
      } else if (answer.status !== 'completed' && answer.status !== 'failed' && now - markedAt >= stall.timeoutMs) {
        const idle = `no progress for ${formatDuration(now - markedAt)}`;
        if (++stalls >= stall.tries)
          throw new CreditStop('STALLED', `${label}: ${idle}, ${stalls} times; giving up (re-run the same command to finish it)`);
        api.onRetry(`${label}: ${idle}; sending it again (${stalls} of ${stall.tries - 1})`);
        ({ answer, location } = await this.post(key, accepted.body, label));
        markedAt = Date.now();
        continue;
      }
      if (answer.total !== items.length)
        throw new CreditStop('BAD_RESPONSE', `${label}: the API reports ${answer.total} items, ${items.length} were sent`);
      const before = results.length;
      for (const r of answer.results ?? []) {
        if (r.index === results.length) results.push(r);
        else if (r.index > results.length) break; // a gap: fetch from results.length again
      }
      onProcessed(Math.max(results.length, Math.min(answer.processed, items.length)));
      if (answer.status === 'completed' && results.length >= items.length) return results;
      if (answer.status === 'failed') {
        if (++resumes >= MAX_ATTEMPTS) throw new CreditStop('ALLOCATION_FAILED', `${label}: failed ${resumes} times; giving up`);
        await sleep(backoffMs(resumes), undefined, { signal: api.signal });
        ({ answer, location } = await this.post(key, accepted.body, label));
        continue;
      }
      // Decided results still to page: ask at once. Nothing new (or only undecided ones): wait first.
      if (results.length === before || results.length >= Math.min(answer.processed, items.length)) {
        await sleep(delay, undefined, { signal: api.signal });
        const cap = Date.now() - markedAt < POLL_IDLE_AFTER_MS ? POLL_BUSY_MS : POLL_MAX_MS;
        delay = Math.min(cap, Math.round(delay * 1.5));
      }
      answer = parseAnswer((await api.request(label, 'GET', api.page(location, results.length))).json, label);
    }
  }
}
