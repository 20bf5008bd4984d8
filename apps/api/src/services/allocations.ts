import { getAllocationStatus, recordPendingAllocation, type Sql } from '@quest/db';
import {
  type AllocationOutcome,
  DomainError,
  idempotentRequestKey,
  newId,
  type PayoutView,
  type RejectionCode,
} from '@quest/domain';
import type { Allocator, Delivery } from '@quest/queue';
import { countAllocation, countReplyFallback } from '../metrics.ts';
import type { AllocationView } from '../schemas/allocations.ts';
import { errorOf } from '../schemas/common.ts';
import { IdempotencyGuard } from './idempotency.ts';

/** What became of one POST /quests/{questId}; the route turns it into HTTP. */
export type AllocationAnswer =
  | { kind: 'payout'; payout: PayoutView; replayed: boolean }
  | { kind: 'rejected'; code: RejectionCode; replayed: boolean }
  | { kind: 'failed' }
  | { kind: 'pending'; allocation: AllocationView; location: string };

export interface AllocateRequest {
  ownerId: string;
  questId: number;
  points: number;
  /** As validated by the route: EIP-55 checksummed. */
  address: string;
  /** The client's Idempotency-Key header, if any. */
  idempotencyKey: string | undefined;
  /** The HTTP request's id, carried to the worker's decision log line. */
  requestId: string;
}

export interface AllocationServiceDeps {
  sql: Sql;
  allocator: Allocator;
  /** Refuses a reused Idempotency-Key with another body while the first is pending (tests may leave it out). */
  idempotency?: IdempotencyGuard | undefined;
}

/** An outcome the database holds for a request, as the worker would have answered it; undefined while undecided. */
async function storedOutcome(sql: Sql, questId: number, key: string): Promise<AllocationOutcome | undefined> {
  const status = await getAllocationStatus(sql, questId, key);
  switch (status?.status) {
    case 'completed':
      return { status: 'completed', payout: status.payout };
    case 'rejected':
      return { status: 'rejected', code: status.code };
    case 'failed':
      return { status: 'failed', code: 'ALLOCATION_FAILED' };
    default:
      return undefined;
  }
}

/**
 * The API side of one allocation request, from its key to its answer: derive the request key (the
 * client's Idempotency-Key scoped by owner and quest, or a fresh id), refuse a reused key with
 * another body, enqueue and wait for the decision, and when no decision came back — read the
 * database if the job finished (its reply was lost), or leave the 202 marker that makes the
 * request's status readable and re-drivable. Replays are marked only for a client's own key.
 */
export class AllocationService {
  constructor(private readonly deps: AllocationServiceDeps) {}

  async allocate(request: AllocateRequest): Promise<AllocationAnswer> {
    const { ownerId, questId, points, address, idempotencyKey } = request;
    const key = idempotencyKey ? idempotentRequestKey(ownerId, questId, idempotencyKey, 'alc') : newId('alc');
    if (idempotencyKey && this.deps.idempotency) {
      await this.deps.idempotency.claim(key, IdempotencyGuard.digest([address.toLowerCase(), points]));
    }
    const delivery = await this.deps.allocator.allocate({ key, questId, points, address, requestId: request.requestId });
    const outcome = await this.settle(questId, key, delivery);
    // A generated key is never replayed but by a redelivered job: only a client's key makes a replay.
    const replayed = idempotencyKey !== undefined && outcome !== undefined && 'replayed' in outcome && outcome.replayed === true;
    const answer = await this.answer(outcome, replayed, { questId, key, address, points, delivery });
    countAllocation(outcome ?? { status: 'pending' });
    return answer;
  }

  /** The status of an allocation (a request key, or a batch item `<batch id>:<index>`), from PostgreSQL. */
  async status(questId: number, allocationId: string): Promise<AllocationView> {
    const status = await getAllocationStatus(this.deps.sql, questId, allocationId);
    if (!status) throw new DomainError('ALLOCATION_NOT_FOUND');
    const base = { id: allocationId, status: status.status, updated_at: status.updatedAt.toISOString() };
    switch (status.status) {
      case 'completed':
        return { ...base, payout: status.payout };
      case 'rejected':
      case 'failed':
        return { ...base, error: errorOf(status.code) };
      case 'pending':
        return base;
    }
  }

  /**
   * The decision as far as it is known: the reply's, or — when none came — the database's if the
   * job finished or is gone (its reply was lost; the row is the truth); undefined while undecided.
   */
  private async settle(questId: number, key: string, delivery: Delivery): Promise<AllocationOutcome | undefined> {
    switch (delivery.kind) {
      case 'decided':
        return delivery.outcome;
      case 'failed':
        return { status: 'failed', code: 'ALLOCATION_FAILED' };
      case 'undecided': {
        const finished = delivery.job === 'completed' || delivery.job === 'unknown';
        const stored = finished ? await storedOutcome(this.deps.sql, questId, key).catch(() => undefined) : undefined;
        countReplyFallback({ reason: delivery.reason, items: 1, decided: stored ? 1 : 0 });
        return stored;
      }
    }
  }

  private async answer(
    outcome: AllocationOutcome | undefined,
    replayed: boolean,
    ctx: { questId: number; key: string; address: string; points: number; delivery: Delivery },
  ): Promise<AllocationAnswer> {
    switch (outcome?.status) {
      case 'completed':
        return { kind: 'payout', payout: outcome.payout, replayed };
      case 'rejected':
        return { kind: 'rejected', code: outcome.code, replayed };
      case 'failed':
        return { kind: 'failed' };
      case undefined: {
        const { questId, key, address, points, delivery } = ctx;
        const enqueuedAt = delivery.kind === 'undecided' ? delivery.enqueuedAt : Date.now();
        const jobId = delivery.kind === 'undecided' ? delivery.jobId : undefined;
        await recordPendingAllocation(this.deps.sql, { questId, key, address, points, enqueuedAt, jobId });
        return {
          kind: 'pending',
          allocation: { id: key, status: 'pending', updated_at: new Date(enqueuedAt).toISOString() },
          location: `/quests/${questId}/allocations/${key}`,
        };
      }
    }
  }
}
