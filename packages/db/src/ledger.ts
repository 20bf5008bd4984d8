import {
  advanceBatchProgress,
  itemsToLookUp,
  newId,
  type PlanAllocationItem,
  type PlanItem,
  planRequests,
  type RequestOutcome,
} from '@quest/domain';
import { pipelinedTransaction, type Sql } from './client.ts';
import { readLedgerState } from './ledger-read.ts';
import { writeDecisions } from './ledger-write.ts';
import { advanceBatch, BatchProgressMoved } from './lifecycle.ts';
import { writeLedgerEvents } from './outbox.ts';

/**
 * The ledger transaction: read → plan → write, in one PostgreSQL transaction, with a fixed number
 * of round trips whatever the list length:
 *
 *  1. read (pipelined behind BEGIN; ledger-read.ts): lock the items' quest rows; read outcomes
 *     already stored for the request keys that may have one; read the accounts of their addresses,
 *     the payouts the reversals name with what their stored reversals already took back, and a
 *     chunk's batch.
 *  2. plan, in memory, with the pure `planRequests`: allocations and reversals strictly in list
 *     order (window, action type, budget, account, balance limit; a reversal's remainder; replays
 *     of stored outcomes; duplicates inside the list); with `advanceBatchProgress`, a chunk's batch
 *     after it; with `planEvents`, the decisions' events.
 *  3. write (pipelined with COMMIT): payouts, reversals and their rejections, each quest's
 *     points_remaining (up by what reversals gave back, also after the quest's window ended), each
 *     account's balance (net of credits and reversals) (ledger-write.ts), the events (outbox.ts)
 *     and a chunk's batch progress (lifecycle.ts) — set-based, through `unnest` arrays.
 *
 * A request key has at most one outcome (payout, reversal or rejection; the database enforces it), so a job
 * that is redelivered after its worker died, or a client retrying with the same Idempotency-Key,
 * gets the original outcome and never a second credit.
 *
 * Two entry points say what they apply: `applyRequests` (single requests, coalesced or not) and
 * `applyBatchChunk` (a slice of a batch, guarded by the batch's progress).
 */

/** An allocation, as a batch chunk carries it. */
export type LedgerItem = PlanAllocationItem;
/** An allocation or a reversal, as single requests carry them. */
export type LedgerRequest = PlanItem;

/**
 * Apply single requests — allocations and reversals, one POST or several coalesced into one job —
 * in list order. On a job's
 * first delivery, stored outcomes are read only for client-chosen keys (`itemsToLookUp`); any
 * other attempt (`firstDelivery: false`) reads them for every item, so whatever an earlier attempt
 * committed is replayed, never applied twice.
 */
export function applyRequests(
  sql: Sql,
  items: readonly LedgerRequest[],
  opts: { firstDelivery: boolean; now?: Date; signal?: AbortSignal },
): Promise<RequestOutcome[]> {
  return runLedger(sql, {
    items,
    lookUp: itemsToLookUp(items, opts.firstDelivery),
    now: opts.now ?? new Date(),
    signal: opts.signal,
  });
}

/**
 * Apply items [start, start + items.length) of a batch, and advance the batch's progress in the same
 * transaction (lifecycle.ts `advanceBatch`), only from where the chunk started. If another copy of
 * the job got there first, the transaction rolls back and this throws BatchProgressMoved: a chunk is
 * never applied twice, so no stored outcome needs reading.
 */
export function applyBatchChunk(
  sql: Sql,
  chunk: { batchId: string; start: number; items: readonly LedgerItem[]; now?: Date; signal?: AbortSignal },
): Promise<RequestOutcome[]> {
  const { batchId, start, items } = chunk;
  return runLedger(sql, { items, lookUp: [], now: chunk.now ?? new Date(), chunk: { batchId, start }, signal: chunk.signal });
}

/** What one ledger transaction applies. */
interface LedgerRun {
  items: readonly LedgerRequest[];
  /** The items whose stored outcomes are read first (see itemsToLookUp). */
  lookUp: readonly LedgerRequest[];
  now: Date;
  /** A batch chunk: the batch, and the index of its first item. */
  chunk?: { batchId: string; start: number } | undefined;
  /**
   * The job's: once its worker abandoned it, the plan is not written. Its first-delivery plan may
   * skip stored outcomes (`itemsToLookUp`), which is sound only while no other attempt of the job
   * can have decided them — and the next owner may once the job is abandoned.
   */
  signal?: AbortSignal | undefined;
}

function runLedger(sql: Sql, run: LedgerRun): Promise<RequestOutcome[]> {
  const { items, now, chunk } = run;
  if (items.length === 0) return Promise.resolve([]);
  return pipelinedTransaction(
    sql,
    async (tx, commit) => {
      const read = await readLedgerState(tx, items, run.lookUp, chunk?.batchId);
      const plan = planRequests(items, read.plan, now, () => newId('pay', now.getTime()));
      const { succeeded, failed } = plan;
      const batch =
        chunk &&
        read.batch &&
        advanceBatchProgress(read.batch, { start: chunk.start, count: items.length, succeeded, failed }, now);
      // The batch is gone or past this chunk's start: another copy of the job applied it.
      if (chunk && !batch) throw new BatchProgressMoved();
      const writes = writeDecisions(tx, plan, now);
      // The decisions' events, in the same transaction (a transactional outbox: see outbox.ts).
      const events = writeLedgerEvents(tx, items, plan, read.quests, now, batch);
      if (events) writes.push(events);
      if (chunk && batch) writes.push(advanceBatch(tx, chunk.start, batch));
      await commit(writes);
      return plan.outcomes;
    },
    run.signal,
  );
}
