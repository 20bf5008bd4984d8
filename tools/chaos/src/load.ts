import { idempotentRequestKey } from '@quest/domain';
import { jsonOrText } from '@quest/testing/http';
import type { Answer, LoadOptions, LoadTarget, Op } from './ops.ts';

/**
 * Concurrent clients that behave as docs/api.md tells a client to: every POST carries an
 * Idempotency-Key; a 5xx, 429, a connection error or a timeout is retried with the same key; a 202
 * is followed on its status URL until it is decided (a `failed` outcome is re-POSTed with the same
 * key). Every answer is recorded with its time, so the invariants can be checked afterwards.
 *
 * With `reverseEvery`, one op in that many reverses a payout an earlier op was answered with (each
 * payout at most once, alternately whole and by 1 point), always under an Idempotency-Key, retried
 * and followed like an allocation.
 */

const BUSINESS_400 = new Set([
  'QUEST_NOT_ACTIVE',
  'ACTION_TYPE_INACTIVE',
  'INSUFFICIENT_POINTS',
  'ACCOUNT_NOT_FOUND',
  // Reversals: never expected here (each payout is reversed by one op only); recorded as rejections
  // so the invariants name them.
  'PAYOUT_ALREADY_REVERSED',
  'REVERSAL_EXCEEDS_PAYOUT',
]);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function call(
  url: string,
  init: RequestInit,
  timeoutMs: number,
): Promise<{ status: Answer; body: any; location?: string | null }> {
  try {
    const res = await fetch(url, { ...init, signal: AbortSignal.timeout(timeoutMs) });
    const body: any = jsonOrText(await res.text());
    return { status: res.status, body, location: res.headers.get('location') };
  } catch {
    return { status: 'error', body: undefined };
  }
}

export class Load {
  readonly ops: Op[] = [];
  private stopIssuing = false;
  private running: Promise<void>[] = [];
  private seq = 0;
  /** Payouts answered to single allocations and not yet picked for a reversal, oldest first. */
  private readonly reversible: { questId: number; payoutId: string; amount: number }[] = [];
  private reversals = 0;

  constructor(
    private readonly target: LoadTarget,
    private readonly opts: LoadOptions,
    /** Every op ends (answered or given up) by this time. */
    private readonly deadline: () => number,
  ) {}

  start(): void {
    this.running = Array.from({ length: this.opts.clients }, (_, c) => this.client(c));
  }

  /** Stop issuing new requests and wait for every request in flight to end (bounded by the deadline). */
  async finish(): Promise<void> {
    this.stopIssuing = true;
    await Promise.all(this.running);
  }

  private async client(c: number): Promise<void> {
    const { questIds, accounts } = this.target;
    let n = 0;
    while (!this.stopIssuing && Date.now() < this.deadline()) {
      n++;
      const i = this.seq++;
      const reverseEvery = this.opts.reverseEvery ?? 0;
      if (reverseEvery > 0 && i % reverseEvery === reverseEvery - 1 && this.reversible.length > 0) {
        await this.reverse(c, n, this.reversible.shift()!);
        continue;
      }
      const questId = questIds[(c + n) % questIds.length]!;
      const batch = i % this.opts.batchEvery === this.opts.batchEvery - 1;
      const keyless = !batch && i % this.opts.keylessEvery === 1;
      const idemKey = keyless ? undefined : `${this.opts.tag}-c${c}-n${n}`;
      const items = Array.from({ length: batch ? this.opts.batchSize : 1 }, (_, k) => ({
        address: !batch && i % this.opts.unknownEvery === 0 ? `0x${'dead'.repeat(10)}` : accounts[(i * 7 + k) % accounts.length]!,
        points: 1 + ((i + k) % 5),
      }));
      const op: Op = {
        kind: batch ? 'batch' : 'alloc',
        client: c,
        questId,
        idemKey,
        requestKey: idemKey ? idempotentRequestKey(this.target.ownerId, questId, idemKey, batch ? 'bat' : 'alc') : '',
        items,
        firstSentAt: Date.now(),
        attempts: [],
        got202: false,
        payoutIds: new Set(),
      };
      if (batch) {
        op.itemPayouts = new Map();
        op.itemRejected = new Set();
      }
      this.ops.push(op);
      await this.run(op);
    }
  }

  private async reverse(c: number, n: number, payout: { questId: number; payoutId: string; amount: number }): Promise<void> {
    const idemKey = `${this.opts.tag}-c${c}-n${n}`;
    // Alternately the whole payout and 1 point of it, so partial reversals are exercised too.
    const points = this.reversals++ % 2 === 1 ? 1 : undefined;
    const op: Op = {
      kind: 'reversal',
      client: c,
      questId: payout.questId,
      idemKey,
      requestKey: idempotentRequestKey(this.target.ownerId, payout.questId, idemKey, 'rev'),
      items: [],
      reversal: { payoutId: payout.payoutId, payoutAmount: payout.amount, points },
      firstSentAt: Date.now(),
      attempts: [],
      got202: false,
      payoutIds: new Set(),
    };
    this.ops.push(op);
    await this.run(op);
  }

  private async run(op: Op): Promise<void> {
    const { apiKey } = this.target;
    const path =
      op.kind === 'batch'
        ? `/quests/${op.questId}/batches`
        : op.kind === 'reversal'
          ? `/quests/${op.questId}/payouts/${op.reversal!.payoutId}/reversals`
          : `/quests/${op.questId}`;
    const body =
      op.kind === 'batch'
        ? { allocations: op.items }
        : op.kind === 'reversal'
          ? op.reversal!.points === undefined
            ? {}
            : { points: op.reversal!.points }
          : op.items[0];
    let tries = 0;
    while (Date.now() < this.deadline()) {
      tries++;
      const sentAt = Date.now();
      const res = await call(
        this.target.baseUrl() + path,
        {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'x-api-key': apiKey,
            ...(op.idemKey ? { 'idempotency-key': op.idemKey } : {}),
          },
          body: JSON.stringify(body),
        },
        this.opts.httpTimeoutMs,
      );
      op.attempts.push({ sentAt, at: Date.now(), status: res.status });
      if (res.status === 200) return this.decided(op, res.body);
      if (res.status === 202) {
        op.got202 = true;
        if (!op.idemKey) op.requestKey = res.body.allocation.id;
        op.first202At ??= Date.now();
        const statusPath =
          op.kind === 'reversal' ? `/quests/${op.questId}/reversals/${op.requestKey}` : `${path}/${op.requestKey}`;
        const final = await this.follow(op, res.location ?? statusPath);
        if (final === 'decided' || final === 'timeout') return;
        if (!op.idemKey) {
          op.outcome = 'abandoned';
          return;
        }
        continue; // failed: re-POST with the same key
      }
      if (res.status === 400 && BUSINESS_400.has(res.body?.code)) {
        op.outcome = 'rejected';
        op.rejectCode = res.body.code;
        op.ackAt = Date.now();
        return;
      }
      if (res.status === 'error' || res.status === 429 || res.status >= 500) {
        if (!op.idemKey) {
          op.outcome = 'abandoned';
          return;
        }
        await sleep(Math.min(1000, 50 * 2 ** Math.min(tries, 5)));
        continue;
      }
      op.outcome = 'unexpected';
      op.detail = `${res.status} ${res.body?.code ?? ''}`;
      op.ackAt = Date.now();
      return;
    }
    op.outcome = op.got202 ? 'unresolved' : 'unanswered';
  }

  /** Poll a 202's status URL until decided, `failed` (→ retry the POST) or the deadline. */
  private async follow(op: Op, location: string): Promise<'decided' | 'failed' | 'timeout'> {
    while (Date.now() < this.deadline()) {
      const res = await call(
        this.target.baseUrl() + location,
        { headers: { 'x-api-key': this.target.apiKey } },
        this.opts.httpTimeoutMs,
      );
      if (res.status === 200) {
        const view = res.body.allocation ?? res.body.batch ?? res.body.reversal;
        if (view.status === 'completed' || view.status === 'rejected') {
          if (op.kind === 'reversal' && view.status === 'completed') {
            this.decided(op, { reversal: view });
          } else if (op.kind === 'batch') {
            // The status page holds the first 100 results; fetch them all for the checks.
            const all = await call(
              `${this.target.baseUrl()}${location}?limit=1000`,
              { headers: { 'x-api-key': this.target.apiKey } },
              this.opts.httpTimeoutMs,
            );
            if (all.status !== 200) continue;
            this.decided(op, all.body);
          } else if (view.status === 'completed') {
            this.decided(op, { payout: view.payout });
          } else {
            op.outcome = 'rejected';
            op.rejectCode = view.error?.code;
            op.ackAt = Date.now();
          }
          return 'decided';
        }
        if (view.status === 'failed') return 'failed';
      }
      await sleep(200);
    }
    op.outcome = 'unresolved';
    return 'timeout';
  }

  private decided(op: Op, body: any): void {
    op.ackAt = Date.now();
    op.outcome = 'completed';
    if (op.kind === 'reversal') {
      op.reversal!.reversalId = body.reversal.id;
      op.reversal!.amount = body.reversal.amount;
      return;
    }
    if (op.kind === 'alloc') {
      op.payoutIds.add(body.payout.id);
      // Reversible by a later op once; an Idempotency-Key retry reports the same payout, never twice.
      if (op.payoutIds.size === 1)
        this.reversible.push({ questId: op.questId, payoutId: body.payout.id, amount: body.payout.amount });
      return;
    }
    for (const r of body.batch.results as { index: number; status: string; payout?: { id: string } }[]) {
      if (r.status === 'completed') op.itemPayouts!.set(r.index, r.payout!.id);
      else op.itemRejected!.add(r.index);
    }
  }
}
