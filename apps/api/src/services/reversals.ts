import { getPayoutDetail, getReversalStatus, type PayoutDetail, questHasPayout, type Sql } from '@quest/db';
import { DomainError, type RejectionCode, type RequestOutcome, type ReversalView } from '@quest/domain';
import { countReversal } from '../metrics.ts';
import { errorOf } from '../schemas/common.ts';
import type { ReversalStatusView } from '../schemas/reversals.ts';
import { RequestPipeline, type RequestPipelineDeps, type RequestResult } from './requests.ts';

/** What became of one POST /quests/{questId}/payouts/{payoutId}/reversals; the route turns it into HTTP. */
export type ReversalAnswer =
  | { kind: 'reversal'; reversal: ReversalView; replayed: boolean }
  | { kind: 'rejected'; code: RejectionCode; replayed: boolean }
  | { kind: 'failed' }
  | { kind: 'pending'; reversal: ReversalStatusView; location: string };

export interface ReverseRequest {
  ownerId: string;
  questId: number;
  payoutId: string;
  /** Absent: the payout's whole unreversed remainder. */
  points?: number | undefined;
  reason?: string | undefined;
  idempotencyKey: string | undefined;
  requestId: string;
}

/** A reversal's outcome the database holds, as the worker would have answered it; undefined while undecided. */
async function storedOutcome(sql: Sql, questId: number, key: string): Promise<RequestOutcome | undefined> {
  const status = await getReversalStatus(sql, questId, key);
  switch (status?.status) {
    case 'completed':
      return { status: 'reversed', reversal: status.reversal };
    case 'rejected':
      return { status: 'rejected', code: status.code };
    case 'failed':
      return { status: 'failed', code: 'ALLOCATION_FAILED' };
    default:
      return undefined;
  }
}

/**
 * The API side of a reversal: a payout of the quest (404 otherwise, before anything is queued),
 * then the shared request pipeline (services/requests.ts): the reversal travels on the quest's
 * partition with its allocations and is decided in their order.
 */
export class ReversalService {
  private readonly pipeline: RequestPipeline;
  constructor(private readonly deps: RequestPipelineDeps) {
    this.pipeline = new RequestPipeline(deps);
  }

  async reverse(request: ReverseRequest): Promise<ReversalAnswer> {
    const { ownerId, questId, payoutId, points, reason, idempotencyKey, requestId } = request;
    if (!(await questHasPayout(this.deps.sql, questId, payoutId))) throw new DomainError('PAYOUT_NOT_FOUND');
    const key = RequestPipeline.key(ownerId, questId, idempotencyKey, 'rev');
    const result = await this.pipeline.submit({
      item: {
        kind: 'reversal',
        key,
        questId,
        payoutId,
        ...(points === undefined ? {} : { points }),
        ...(reason === undefined ? {} : { reason }),
        requestId,
      },
      idempotencyKey,
      // One JSON array: an absent field and an empty reason stay different bodies.
      body: [JSON.stringify([payoutId, points ?? null, reason ?? null])],
      stored: storedOutcome,
    });
    countReversal(result.kind === 'decided' ? result.outcome : { status: result.kind });
    return this.answer(result, { questId, payoutId, key });
  }

  /** Where a reversal stands, from PostgreSQL. */
  async status(questId: number, id: string): Promise<ReversalStatusView> {
    const status = await getReversalStatus(this.deps.sql, questId, id);
    if (!status) throw new DomainError('REVERSAL_NOT_FOUND');
    const updated_at = status.updatedAt.toISOString();
    switch (status.status) {
      case 'completed': {
        const { id: _, ...reversal } = status.reversal;
        return { id, status: 'completed', ...reversal, updated_at };
      }
      case 'rejected':
        return { id, status: 'rejected', payout_id: status.payoutId, quest_id: questId, error: errorOf(status.code), updated_at };
      case 'failed':
        return {
          id,
          status: 'failed',
          payout_id: status.payoutId,
          quest_id: questId,
          error: errorOf('REVERSAL_FAILED'),
          updated_at,
        };
      case 'pending':
        return { id, status: 'pending', payout_id: status.payoutId, quest_id: questId, updated_at };
    }
  }

  /** A payout of the quest with its reversals (GET /quests/{questId}/payouts/{payoutId}). */
  async payout(questId: number, payoutId: string): Promise<PayoutDetail> {
    const detail = await getPayoutDetail(this.deps.sql, questId, payoutId);
    if (!detail) throw new DomainError('PAYOUT_NOT_FOUND');
    return detail;
  }

  private answer(result: RequestResult, ctx: { questId: number; payoutId: string; key: string }): ReversalAnswer {
    const { questId, payoutId, key } = ctx;
    switch (result.kind) {
      case 'failed':
        return { kind: 'failed' };
      case 'pending': {
        const updated_at = new Date(result.enqueuedAt).toISOString();
        return {
          kind: 'pending',
          reversal: { id: key, status: 'pending', payout_id: payoutId, quest_id: questId, updated_at },
          location: `/quests/${questId}/reversals/${key}`,
        };
      }
      case 'decided': {
        const { outcome, replayed } = result;
        switch (outcome.status) {
          case 'reversed':
            return { kind: 'reversal', reversal: outcome.reversal, replayed };
          case 'rejected':
            return { kind: 'rejected', code: outcome.code, replayed };
          case 'completed':
            // A rev_ key never carries a credit; a worker that answered one is a bug.
            throw new Error(`reversal ${key} was answered with a payout`);
        }
      }
    }
  }
}
