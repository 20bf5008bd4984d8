import { performance } from 'node:perf_hooks';
import type { AckedPayout } from './http-load.ts';
import { type LatencySummary, summarize } from './stats.ts';

/**
 * Reversals mixed into an allocation load: closed-loop clients that take the payouts the load was
 * just given (in the order they were acknowledged) and reverse each one whole,
 * `POST /quests/:questId/payouts/:payoutId/reversals` with an Idempotency-Key of its own. Each reversal
 * is sent after its payout was acknowledged, so the service must decide it after that payout.
 *
 * Exactly-once is probed on the way: every `replayEvery`-th reversal is sent again with the same key
 * once answered (it must replay: 200, `Idempotent-Replayed: true`, the same reversal id), and every
 * `reverseAgainEvery`-th payout is reversed a second time with a fresh key (it must be refused,
 * PAYOUT_ALREADY_REVERSED). Neither extra request counts as a reversal or in the latency.
 */

export interface ReversalLoadOptions {
  baseUrl: string;
  apiKey: string;
  clients: number;
  /** Reversals to make (each of a different payout). */
  count: number;
  replayEvery: number;
  reverseAgainEvery: number;
  tag: string;
  /** Gives up waiting for payouts to reverse after this (the allocation load ended and fed too few). */
  starvedMs: number;
}

export interface AckedReversal {
  id: string;
  payoutId: string;
  questId: number;
  amount: number;
  sentAt: number;
  ackAt: number;
}

export interface ReversalLoadResult {
  elapsedS: number;
  /** Reversals answered 200 (each the first answer of its key). */
  reversals: AckedReversal[];
  accepted202: number;
  /** Status → count for first attempts answered neither 200 nor 202. */
  otherStatus: Record<string, number>;
  errors: number;
  replays: { sent: number; ok: number };
  reverseAgain: { sent: number; refused: number };
  latency: LatencySummary;
  /** Reversals answered 200 per second, from the first reversal sent to the last answered. */
  rate: number;
  /** Reversals answered while the allocation load was still running. */
  duringLoad: number;
  sampleErrors: string[];
}

const SEND_TIMEOUT_MS = 30_000;

/** An answer to a reversal's POST (or its status URL's, once decided). */
interface Answer {
  status: number;
  replayed: boolean;
  text: string;
  location: string | null;
}

export class ReversalLoad {
  private readonly queue: AckedPayout[] = [];
  private waiting: (() => void)[] = [];
  private loadEndedAt: number | undefined;

  constructor(private readonly opts: ReversalLoadOptions) {}

  /** Feed a payout the allocation load was given (http-load's onPayout). */
  offer(p: AckedPayout): void {
    this.queue.push(p);
    for (const w of this.waiting.splice(0)) w();
  }

  loadEnded(): void {
    this.loadEndedAt = Date.now();
    for (const w of this.waiting.splice(0)) w();
  }

  /** POST a reversal of the whole payout under `key`; status 0 when it was not answered. */
  private async post(p: AckedPayout, key: string): Promise<Answer> {
    const { opts } = this;
    try {
      const res = await fetch(`${opts.baseUrl}/quests/${p.questId}/payouts/${p.id}/reversals`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': opts.apiKey, 'idempotency-key': key },
        body: '{}',
        signal: AbortSignal.timeout(SEND_TIMEOUT_MS),
      });
      const text = await res.text();
      return {
        status: res.status,
        replayed: res.headers.get('idempotent-replayed') === 'true',
        text,
        location: res.headers.get('location'),
      };
    } catch (error) {
      return { status: 0, replayed: false, text: String(error), location: null };
    }
  }

  /** Poll a 202's status URL until decided; a completed one answers as a 200 would. */
  private async follow(p: AckedPayout, key: string, location: string | null): Promise<Answer> {
    const { opts } = this;
    const url = `${opts.baseUrl}${location ?? `/quests/${p.questId}/reversals/unknown`}`;
    const deadline = Date.now() + SEND_TIMEOUT_MS;
    while (Date.now() < deadline) {
      const res = await fetch(url, { headers: { 'x-api-key': opts.apiKey } }).catch(() => undefined);
      const body = res?.ok ? ((await res.json()) as { reversal: { status: string } & Record<string, unknown> }) : undefined;
      const status = body?.reversal.status;
      if (status === 'completed') return { status: 200, replayed: false, text: JSON.stringify(body), location: null };
      if (status === 'rejected' || status === 'failed')
        return { status: 400, replayed: false, text: `${key} ${status}: ${JSON.stringify(body)}`, location: null };
      await new Promise((r) => setTimeout(r, 50));
    }
    return { status: 0, replayed: false, text: `${key}: still pending after ${SEND_TIMEOUT_MS} ms`, location: null };
  }

  /** The next payout the load was given; undefined once the load ended `starvedMs` ago with none left. */
  private async next(): Promise<AckedPayout | undefined> {
    const deadline = () => (this.loadEndedAt ?? Number.POSITIVE_INFINITY) + this.opts.starvedMs;
    while (this.queue.length === 0) {
      if (Date.now() > deadline()) return undefined;
      await new Promise<void>((resolve) => {
        this.waiting.push(resolve);
        setTimeout(resolve, 50);
      });
    }
    return this.queue.shift();
  }

  async run(): Promise<ReversalLoadResult> {
    const { opts } = this;
    const reversals: AckedReversal[] = [];
    const latencies: number[] = [];
    const otherStatus: Record<string, number> = {};
    const sampleErrors: string[] = [];
    const replays = { sent: 0, ok: 0 };
    const reverseAgain = { sent: 0, refused: 0 };
    let accepted202 = 0;
    let errors = 0;
    let taken = 0;
    let firstSent: number | undefined;
    let lastAck = 0;
    const note = (msg: string) => {
      if (sampleErrors.length < 5) sampleErrors.push(msg);
    };

    const client = async () => {
      for (;;) {
        if (taken >= opts.count) return;
        const i = taken++;
        const p = await this.next();
        if (!p) return;
        const key = `${opts.tag}-rev-${i}`;
        const sentAt = Date.now();
        firstSent ??= sentAt;
        const t0 = performance.now();
        let res = await this.post(p, key);
        const ms = performance.now() - t0;
        if (res.status === 202) {
          // Not decided within the wait: follow it to its decision (not counted in the latency).
          accepted202++;
          res = await this.follow(p, key, res.location);
        } else if (res.status === 200) latencies.push(ms);
        if (res.status !== 200) {
          if (res.status === 0) errors++;
          else otherStatus[res.status] = (otherStatus[res.status] ?? 0) + 1;
          note(`reversal ${res.status}: ${res.text.slice(0, 200)}`);
          continue;
        }
        const ackAt = Date.now();
        lastAck = Math.max(lastAck, ackAt);
        const { reversal } = JSON.parse(res.text) as { reversal: { id: string; amount: number; payout_id: string } };
        reversals.push({
          id: reversal.id,
          payoutId: reversal.payout_id,
          questId: p.questId,
          amount: reversal.amount,
          sentAt,
          ackAt,
        });
        if (i % opts.replayEvery === 0) {
          replays.sent++;
          const again = await this.post(p, key);
          const body = again.status === 200 ? (JSON.parse(again.text) as { reversal: { id: string } }) : undefined;
          if (again.replayed && body?.reversal.id === reversal.id) replays.ok++;
          else note(`replay of ${key}: ${again.status} replayed=${again.replayed} ${again.text.slice(0, 200)}`);
        }
        if (i % opts.reverseAgainEvery === Math.floor(opts.reverseAgainEvery / 2)) {
          reverseAgain.sent++;
          const again = await this.post(p, `${key}-again`);
          if (again.status === 400 && again.text.includes('"PAYOUT_ALREADY_REVERSED"')) reverseAgain.refused++;
          else note(`second reversal of ${p.id}: ${again.status} ${again.text.slice(0, 200)}`);
        }
      }
    };

    await Promise.all(Array.from({ length: opts.clients }, client));
    const endedAt = this.loadEndedAt ?? Number.POSITIVE_INFINITY;
    const elapsedS = firstSent === undefined ? 0 : (lastAck - firstSent) / 1000;
    return {
      elapsedS,
      reversals,
      accepted202,
      otherStatus,
      errors,
      replays,
      reverseAgain,
      latency: summarize(latencies),
      rate: elapsedS > 0 ? reversals.length / elapsedS : 0,
      duringLoad: reversals.filter((r) => r.ackAt <= endedAt).length,
      sampleErrors,
    };
  }
}
