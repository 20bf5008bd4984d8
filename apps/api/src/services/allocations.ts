import { getAllocationStatus, type Sql } from '@quest/db';
import { DomainError, type PayoutView, type RejectionCode, type RequestOutcome } from '@quest/domain';
import { countAllocation } from '../metrics.ts';
import type { AllocationView } from '../schemas/allocations.ts';
import { errorOf } from '../schemas/common.ts';
import { RequestPipeline, type RequestPipelineDeps } from './requests.ts';

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
  /** As validated by the route: lower-cased (the ledger matches accounts in any case). */
  address: string;
  /** The client's Idempotency-Key header, if any. */
  idempotencyKey: string | undefined;
  /** The HTTP request's id, carried to the worker's decision log line. */
  requestId: string;
}

export type AllocationServiceDeps = RequestPipelineDeps;

/** An allocation's outcome the database holds, as the worker would have answered it; undefined while undecided. */
async function storedOutcome(sql: Sql, questId: number, key: string): Promise<RequestOutcome | undefined> {
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

/** The API side of one allocation request, on the shared request pipeline (services/requests.ts). */
export class AllocationService {
  private readonly pipeline: RequestPipeline;
  constructor(private readonly deps: AllocationServiceDeps) {
    this.pipeline = new RequestPipeline(deps);
  }

  async allocate(request: AllocateRequest): Promise<AllocationAnswer> {
    const { ownerId, questId, points, address, idempotencyKey, requestId } = request;
    const key = RequestPipeline.key(ownerId, questId, idempotencyKey, 'alc');
    const result = await this.pipeline.submit({
      item: { key, questId, points, address, requestId },
      idempotencyKey,
      body: [address.toLowerCase(), points],
      stored: storedOutcome,
    });
    const answer = this.answer(result, questId, key);
    countAllocation(result.kind === 'decided' ? result.outcome : { status: result.kind });
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

  private answer(result: Awaited<ReturnType<RequestPipeline['submit']>>, questId: number, key: string): AllocationAnswer {
    switch (result.kind) {
      case 'failed':
        return { kind: 'failed' };
      case 'pending':
        return {
          kind: 'pending',
          allocation: { id: key, status: 'pending', updated_at: new Date(result.enqueuedAt).toISOString() },
          location: `/quests/${questId}/allocations/${key}`,
        };
      case 'decided': {
        const { outcome, replayed } = result;
        switch (outcome.status) {
          case 'completed':
            return { kind: 'payout', payout: outcome.payout, replayed };
          case 'rejected':
            return { kind: 'rejected', code: outcome.code, replayed };
          case 'reversed':
            // An alc_ key never carries a reversal; a worker that answered one is a bug.
            throw new Error(`allocation ${key} was answered with a reversal`);
        }
      }
    }
  }
}
