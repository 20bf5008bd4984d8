import { getPayoutDetail, getReversalStatus, type PayoutDetail, type Sql } from '@quest/db';
import { DomainError } from '@quest/domain';
import { errorOf } from '../schemas/common.ts';
import type { ReversalStatusView } from '../schemas/reversals.ts';

/** A reversal's status and a payout's detail (the reversal's write is commands/reversal.ts). */
export class ReversalService {
  constructor(private readonly sql: Sql) {}

  /** Where a reversal stands, from PostgreSQL. */
  async status(questId: number, id: string): Promise<ReversalStatusView> {
    const status = await getReversalStatus(this.sql, questId, id);
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
    const detail = await getPayoutDetail(this.sql, questId, payoutId);
    if (!detail) throw new DomainError('PAYOUT_NOT_FOUND');
    return detail;
  }
}
