import { getAllocationStatus, type Sql } from '@quest/db';
import { DomainError } from '@quest/domain';
import type { AllocationView } from '../schemas/allocations.ts';
import { errorOf } from '../schemas/common.ts';

/** An allocation's status read (its write is commands/credit.ts). */
export class AllocationService {
  constructor(private readonly sql: Sql) {}

  /** The status of an allocation (a request key, or a batch item `<batch id>:<index>`), from PostgreSQL. */
  async status(questId: number, allocationId: string): Promise<AllocationView> {
    const status = await getAllocationStatus(this.sql, questId, allocationId);
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
}
