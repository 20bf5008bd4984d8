import { createHash } from 'node:crypto';
import { type BatchRow, getBatch, getBatchResults, insertBatch, type Sql } from '@quest/db';
import { DomainError, idempotentRequestKey, newId } from '@quest/domain';
import type { Allocator } from '@quest/queue';
import { countBatchItems } from '../metrics.ts';
import { batchResultView, batchSummary, type BatchView } from '../schemas/batches.ts';
import type { IdempotencyGuard } from './idempotency.ts';

/**
 * What became of one POST /quests/{questId}/batches; the route turns it into HTTP. `replayed`: an
 * earlier request with this Idempotency-Key created the batch; `respondedAsync`: the wait was
 * skipped as the request preferred (`Prefer: respond-async`).
 */
export type BatchAnswer = { replayed: boolean; respondedAsync: boolean } & (
  | { kind: 'completed'; batch: BatchView }
  | { kind: 'failed'; batchId: string; processed: number; total: number }
  | { kind: 'pending'; batch: BatchView; location: string }
);

export interface CreateBatchRequest {
  ownerId: string;
  questId: number;
  items: readonly { address: string; points: number }[];
  idempotencyKey: string | undefined;
  /** Answer as soon as the batch is queued (`Prefer: respond-async`) instead of waiting `waitMs`. */
  respondAsync: boolean;
}

export interface BatchServiceDeps {
  sql: Sql;
  allocator: Allocator;
  idempotency?: IdempotencyGuard | undefined;
  /** How long a POST waits for its batch to finish before answering 202. */
  waitMs: number;
}

function batchDigest(items: readonly { address: string; points: number }[]): string {
  const h = createHash('sha256');
  for (const i of items) h.update(`${i.address}:${i.points};`);
  return h.digest('hex');
}

/** IDEMPOTENCY_KEY_REUSED for a batch, telling the size of the batch stored under the key (a client re-cutting a file can name it). */
const keyReused = (stored: BatchRow | undefined) =>
  new DomainError('IDEMPOTENCY_KEY_REUSED', undefined, stored ? { total: stored.total } : undefined);

/**
 * The API side of a batch's life: its id (from the client's Idempotency-Key, or fresh), the
 * refusal of a reused key with other items, its row with every item (accepted: its place in the
 * quest's order is fixed once its job is queued), its job (shared by concurrent retries; a failed
 * batch resumes from its last committed chunk), the wait, and the answer — read from the row,
 * which is the truth whenever the job's own reply did not come.
 */
export class BatchService {
  constructor(private readonly deps: BatchServiceDeps) {}

  async create(request: CreateBatchRequest): Promise<BatchAnswer> {
    const { sql, allocator, idempotency } = this.deps;
    const { ownerId, questId, items, idempotencyKey } = request;
    const batchId = idempotencyKey ? idempotentRequestKey(ownerId, questId, idempotencyKey, 'bat') : newId('bat');
    const digest = batchDigest(items);
    if (idempotencyKey && idempotency) {
      try {
        await idempotency.claim(batchId, digest);
      } catch (error) {
        if (!(error instanceof DomainError && error.code === 'IDEMPOTENCY_KEY_REUSED')) throw error;
        throw keyReused(await getBatch(sql, questId, batchId));
      }
    }
    const inserted = await insertBatch(sql, {
      id: batchId,
      questId,
      ownerId,
      digest,
      addresses: items.map((i) => i.address),
      points: items.map((i) => i.points),
    });
    const row = inserted ?? (await getBatch(sql, questId, batchId));
    if (!row) throw new Error(`batch ${batchId} exists for another quest`);
    if (row.items_digest !== digest) throw keyReused(row);
    // An earlier request with this Idempotency-Key created the batch: this answer reports it.
    const replayed = inserted === undefined;

    let final: BatchRow | undefined = row.status === 'completed' ? row : undefined;
    let current: BatchRow | undefined;
    const respondedAsync = !final && request.respondAsync;
    if (!final) {
      const reply = await allocator.runBatch({ batchId, questId }, { waitMs: request.respondAsync ? 0 : this.deps.waitMs });
      current = await getBatch(sql, questId, batchId);
      // Without a reply (it timed out, was lost, or another request's job carried the batch),
      // the row is the truth: completed is final. A failed row may be the previous attempt's,
      // which this request's job is about to resume, so only the job's own answer says failed.
      if (reply || current?.status === 'completed') final = current;
    }
    countBatchItems(final ?? row);
    if (final?.status === 'completed') {
      const results = await getBatchResults(sql, batchId, final.total, 0);
      const batch = { ...batchSummary(final), results: results.map(batchResultView) };
      return { kind: 'completed', batch, replayed, respondedAsync };
    }
    if (final?.status === 'failed') {
      return { kind: 'failed', batchId, processed: final.processed, total: final.total, replayed, respondedAsync };
    }
    const location = `/quests/${questId}/batches/${batchId}`;
    return { kind: 'pending', batch: batchSummary(current ?? row), location, replayed, respondedAsync };
  }

  /** A batch, its progress, and a page of its results. */
  async get(questId: number, batchId: string, page: { limit: number; offset: number }): Promise<BatchView> {
    const row = await getBatch(this.deps.sql, questId, batchId);
    if (!row) throw new DomainError('BATCH_NOT_FOUND');
    const results = await getBatchResults(this.deps.sql, batchId, page.limit, page.offset);
    return { ...batchSummary(row), results: results.map(batchResultView) };
  }
}
