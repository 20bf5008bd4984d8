import { getAllocationStatus, getReversalStatus, recordPendingRequest, type Sql } from '@quest/db';
import {
  type AllocationItem,
  idempotentRequestKey,
  isReversalItem,
  newId,
  type RequestItem,
  type RequestOutcome,
  type ReversalItem,
} from '@quest/domain';
import type { Allocator, Delivery } from '@quest/queue';
import { countReplyFallback } from '../metrics.ts';
import { IdempotencyGuard } from '../services/idempotency.ts';

/**
 * The API side of one single request — an allocation or a reversal — shared by their commands:
 * the request key (the client's Idempotency-Key scoped by owner and quest, or a fresh id), the
 * refusal of a reused key with another body, enqueue and wait for the decision on the quest's
 * partition, and when no decision came back: the database's answer if the job finished (its reply
 * was lost), or the 202 marker that makes the request's status readable and re-drivable. Replays
 * are marked only for a client's own key. What a decision means to the caller is each command's.
 */

export interface RequestPipelineDeps {
  sql: Sql;
  allocator: Allocator;
  /** Refuses a reused Idempotency-Key with another body while the first is pending (tests may leave it out). */
  idempotency?: IdempotencyGuard | undefined;
}

/** A request's outcome as far as it is known: decided (credited, reversed, rejected or failed), or still pending. */
export type Settled = RequestOutcome | { status: 'pending'; enqueuedAt: number };

/** The outcomes an item of one kind can have: an allocation is never reversed, a reversal never credits. */
export type SettledFor<I extends RequestItem> = I extends ReversalItem
  ? Exclude<Settled, { status: 'completed' }>
  : Exclude<Settled, { status: 'reversed' }>;

export interface RequestSubmission<I extends RequestItem> {
  /** The item to decide, with its request key (see RequestPipeline.key). */
  item: I;
  /** The client's Idempotency-Key header, if any. */
  idempotencyKey: string | undefined;
  /** The body's meaningful fields, in a canonical order: the same key with another body is refused. */
  body: readonly (string | number)[];
}

/** The outcome the database holds for an item, as a worker would have answered it; undefined while undecided. */
async function storedOutcome(sql: Sql, item: RequestItem): Promise<RequestOutcome | undefined> {
  if (isReversalItem(item)) {
    const status = await getReversalStatus(sql, item.questId, item.key);
    if (status?.status === 'completed') return { status: 'reversed', reversal: status.reversal };
    return status?.status === 'rejected' ? { status: 'rejected', code: status.code } : failedOrUndecided(status?.status);
  }
  const status = await getAllocationStatus(sql, item.questId, item.key);
  if (status?.status === 'completed') return { status: 'completed', payout: status.payout };
  return status?.status === 'rejected' ? { status: 'rejected', code: status.code } : failedOrUndecided(status?.status);
}

const failedOrUndecided = (status: string | undefined): RequestOutcome | undefined =>
  status === 'failed' ? { status: 'failed', code: 'ALLOCATION_FAILED' } : undefined;

/** The status an outcome of this item's kind may not have: the one check that the worker answered the right kind. */
const FOREIGN_STATUS = { allocation: 'reversed', reversal: 'completed' } as const;

export class RequestPipeline {
  constructor(private readonly deps: RequestPipelineDeps) {}

  /** The request key: derived from the client's Idempotency-Key (scoped by owner and quest), or fresh. */
  static key(ownerId: string, questId: number, idempotencyKey: string | undefined, prefix: 'alc' | 'rev'): string {
    return idempotencyKey ? idempotentRequestKey(ownerId, questId, idempotencyKey, prefix) : newId(prefix);
  }

  submit(submission: RequestSubmission<AllocationItem>): Promise<SettledFor<AllocationItem>>;
  submit(submission: RequestSubmission<ReversalItem>): Promise<SettledFor<ReversalItem>>;
  async submit({ item, idempotencyKey, body }: RequestSubmission<RequestItem>): Promise<Settled> {
    const { sql, allocator, idempotency } = this.deps;
    if (idempotencyKey && idempotency) await idempotency.claim(item.key, IdempotencyGuard.digest(body));
    const delivery = await allocator.allocate(item);
    const outcome = await this.settle(item, delivery);
    if (outcome === undefined) {
      const enqueuedAt = delivery.kind === 'undecided' ? delivery.enqueuedAt : Date.now();
      const jobId = delivery.kind === 'undecided' ? delivery.jobId : undefined;
      await recordPendingRequest(sql, { ...item, enqueuedAt, jobId });
      return { status: 'pending', enqueuedAt };
    }
    if (outcome.status === FOREIGN_STATUS[item.kind ?? 'allocation'])
      throw new Error(`request ${item.key} (${item.kind ?? 'allocation'}) was answered ${outcome.status}`);
    // A generated key is never replayed but by a redelivered job: only a client's key makes a replay.
    if (outcome.status !== 'failed' && outcome.replayed && idempotencyKey === undefined) {
      const { replayed: _, ...fresh } = outcome;
      return fresh;
    }
    return outcome;
  }

  /**
   * The decision as far as it is known: the reply's, or — when none came — the database's if the
   * job finished or is gone (its reply was lost; the row is the truth); undefined while undecided.
   */
  private async settle(item: RequestItem, delivery: Delivery): Promise<RequestOutcome | undefined> {
    switch (delivery.kind) {
      case 'decided':
        return delivery.outcome;
      case 'failed':
        return { status: 'failed', code: 'ALLOCATION_FAILED' };
      case 'undecided': {
        const finished = delivery.job === 'completed' || delivery.job === 'unknown';
        const found = finished ? await storedOutcome(this.deps.sql, item).catch(() => undefined) : undefined;
        countReplyFallback({ reason: delivery.reason, items: 1, decided: found ? 1 : 0 });
        return found;
      }
    }
  }
}
