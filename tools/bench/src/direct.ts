import { performance } from 'node:perf_hooks';
import {
  applyBatchChunk,
  applyRequests,
  insertBatch,
  getBatchItems,
  getBatchProgress,
  type LedgerItem,
  type Sql,
  startBatch,
} from '@quest/db';
import { type RequestOutcome, newId, partitionOf } from '@quest/domain';
import { type LatencySummary, summarize } from './stats.ts';

/**
 * The LIMIT: the service's own ledger transaction (`applyRequests` from @quest/db) driven
 * directly through postgres.js from this process: no HTTP, no Redis, no queue, no worker.
 * Whatever the service adds on top of this is overhead the service could, in principle, remove.
 */

export interface DirectResult {
  kind: string;
  concurrency: number;
  elapsedS: number;
  transactions: number;
  completed: number;
  notCompleted: number;
  errors: number;
  sampleErrors: string[];
  payoutIds: string[];
  /** Per-transaction latency (ms) for single-item modes; per item wait for the coalesced mode. */
  latency: LatencySummary;
  /** Completed allocations (credits) per second. */
  rate: number;
  /** Mean items per transaction (coalesced mode). */
  itemsPerTransaction?: number;
}

type Pick = () => { questId: number; address: string };

/**
 * What the worker passes on a job's first delivery (apps/worker/src/processor.ts): stored
 * outcomes are looked up only for client Idempotency-Keys; the limit's keys are generated like
 * the API's, so none is looked up — the same transaction the service runs.
 */
const FIRST_DELIVERY = { firstDelivery: true } as const;

let keySeq = 0;
const limitKey = () => newId('alc');

/** What every limit driver counts, and the DirectResult it adds up to. */
class Tally {
  readonly payoutIds: string[] = [];
  readonly latencies: number[] = [];
  readonly sampleErrors: string[] = [];
  transactions = 0;
  completed = 0;
  notCompleted = 0;
  errors = 0;
  private readonly t0 = performance.now();

  /** Count a transaction's outcomes; optionally keep a rejected one as a sample. */
  outcomes(outcomes: readonly RequestOutcome[], sampleRejected = false): void {
    let bad = false;
    for (const o of outcomes) {
      if (o.status === 'completed') {
        this.completed++;
        this.payoutIds.push(o.payout.id);
      } else {
        this.notCompleted++;
        bad = true;
      }
    }
    if (sampleRejected && bad) this.sample(JSON.stringify(outcomes[0]));
  }

  error(error: unknown): void {
    this.errors++;
    this.sample(String((error as Error).message ?? error));
  }

  private sample(text: string): void {
    if (this.sampleErrors.length < 5) this.sampleErrors.push(text);
  }

  result(kind: string, concurrency: number): DirectResult {
    const elapsedS = (performance.now() - this.t0) / 1000;
    return {
      kind,
      concurrency,
      elapsedS,
      transactions: this.transactions,
      completed: this.completed,
      notCompleted: this.notCompleted,
      errors: this.errors,
      sampleErrors: this.sampleErrors,
      payoutIds: this.payoutIds,
      latency: summarize(this.latencies),
      rate: this.completed / elapsedS,
    };
  }
}

/**
 * `concurrency` loops, each running one single-item ledger transaction after another, for
 * `durationS` seconds or until `amount` transactions in total: what a naive service (one request,
 * one transaction) could do at best.
 */
export async function directSingle(
  sql: Sql,
  opts: { concurrency: number; durationS?: number; amount?: number; pick: Pick; points?: number },
): Promise<DirectResult> {
  const tally = new Tally();
  let started = 0;
  const deadline = opts.durationS ? performance.now() + opts.durationS * 1000 : Number.POSITIVE_INFINITY;
  const more = () => performance.now() < deadline && (opts.amount === undefined || started < opts.amount);
  const loop = async () => {
    while (more()) {
      started++;
      const { questId, address } = opts.pick();
      const item: LedgerItem = { key: limitKey(), questId, points: opts.points ?? 1, address };
      const s = performance.now();
      try {
        const outcomes = await applyRequests(sql, [item], FIRST_DELIVERY);
        tally.latencies.push(performance.now() - s);
        tally.transactions++;
        tally.outcomes(outcomes, true);
      } catch (error) {
        tally.error(error);
      }
    }
  };
  await Promise.all(Array.from({ length: opts.concurrency }, loop));
  return tally.result('single-item transactions', opts.concurrency);
}

/**
 * The service's job shape without the service: `clients` closed loops each submit one item and
 * wait for it; items are routed to `partitions` partitions (the same partitionOf), and each
 * partition applies whatever has accumulated as ONE ordered list (≤ maxItems), one list at a time
 * (global concurrency 1). This is the ceiling of the coalescing design on this database.
 */
export async function directCoalesced(
  sql: Sql,
  opts: { clients: number; partitions: number; maxItems: number; durationS: number; pick: Pick; points?: number },
): Promise<DirectResult> {
  interface Pending {
    item: LedgerItem;
    resolve: (o: RequestOutcome | Error) => void;
  }
  const buffers: Pending[][] = Array.from({ length: opts.partitions }, () => []);
  const running: boolean[] = new Array(opts.partitions).fill(false);
  const tally = new Tally();
  let items = 0;

  const kick = (p: number) => {
    if (running[p] || buffers[p]!.length === 0) return;
    running[p] = true;
    const list = buffers[p]!.splice(0, opts.maxItems);
    applyRequests(
      sql,
      list.map((x) => x.item),
      FIRST_DELIVERY,
    )
      .then(
        (outcomes) => {
          tally.transactions++;
          items += list.length;
          list.forEach((x, i) => {
            x.resolve(outcomes[i] ?? new Error('missing outcome'));
          });
        },
        (error: unknown) => {
          tally.transactions++;
          for (const x of list) x.resolve(error instanceof Error ? error : new Error(String(error)));
        },
      )
      .finally(() => {
        running[p] = false;
        kick(p);
      });
  };

  const deadline = performance.now() + opts.durationS * 1000;
  const loop = async () => {
    while (performance.now() < deadline) {
      const { questId, address } = opts.pick();
      const item: LedgerItem = { key: limitKey(), questId, points: opts.points ?? 1, address };
      const p = partitionOf(questId, opts.partitions);
      const s = performance.now();
      const outcome = await new Promise<RequestOutcome | Error>((resolve) => {
        buffers[p]!.push({ item, resolve });
        kick(p);
      });
      tally.latencies.push(performance.now() - s);
      if (outcome instanceof Error) tally.error(outcome);
      else tally.outcomes([outcome]);
    }
  };
  await Promise.all(Array.from({ length: opts.clients }, loop));
  return {
    ...tally.result('coalesced lists per partition', opts.clients),
    itemsPerTransaction: tally.transactions ? items / tally.transactions : 0,
  };
}

/**
 * Exactly what the worker's processBatch does per batch, minus the queue: a batches row, then
 * the worker's batch lifecycle from @quest/db: insertBatch (items stored), startBatch, then
 * getBatchItems + applyBatchChunk per chunk of
 * `chunkSize` items, and the progress re-read between chunks. Batches run one after another (a
 * quest's batches share one partition, so the service cannot run them in parallel either).
 */
export async function directBatches(
  sql: Sql,
  opts: { questId: number; ownerId: string; addresses: readonly string[]; batchSize: number; chunkSize: number; points?: number },
): Promise<DirectResult & { batches: number }> {
  const tally = new Tally();
  let batches = 0;
  const points = opts.points ?? 1;
  for (let b0 = 0; b0 < opts.addresses.length; b0 += opts.batchSize) {
    const addresses = opts.addresses.slice(b0, b0 + opts.batchSize);
    const batchId = newId('bat');
    batches++;
    await insertBatch(sql, {
      id: batchId,
      questId: opts.questId,
      ownerId: opts.ownerId,
      digest: `bench-${++keySeq}`,
      addresses,
      points: addresses.map(() => points),
    });
    await startBatch(sql, batchId);
    let processed = 0;
    while (processed < addresses.length) {
      const start = processed;
      const end = Math.min(start + opts.chunkSize, addresses.length);
      const s = performance.now();
      try {
        const stored = (await getBatchItems(sql, batchId, start, end))!;
        const items: LedgerItem[] = stored.addresses.map((address, n) => ({
          key: `${batchId}:${start + n}`,
          questId: opts.questId,
          points: stored.points[n]!,
          address,
          batchId,
          itemIndex: start + n,
        }));
        const outcomes = await applyBatchChunk(sql, { batchId, start, items });
        tally.transactions++;
        tally.latencies.push(performance.now() - s);
        tally.outcomes(outcomes);
      } catch (error) {
        tally.error(error);
        break;
      }
      const row = await getBatchProgress(sql, batchId);
      processed = row?.processed ?? end;
    }
  }
  return { ...tally.result(`processBatch chunks of ${opts.chunkSize}`, 1), batches };
}
