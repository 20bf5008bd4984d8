import type { Sql } from '@quest/db';
import { getAllocationStatus } from '@quest/db';
import type { AllocationItem, AllocationOutcome } from '@quest/domain';

/**
 * The database's decision for each item, undefined while it has none: what the API answers when a
 * job finished but its reply did not come (lost with its stream, trimmed, or a failover). The same
 * reads as the status route; only run for jobs that finished, so a slow queue costs no queries.
 */
export function lookupOutcomes(sql: Sql) {
  return (items: readonly AllocationItem[]): Promise<(AllocationOutcome | undefined)[]> =>
    Promise.all(
      items.map(async (item): Promise<AllocationOutcome | undefined> => {
        const status = await getAllocationStatus(sql, item.questId, item.key);
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
      }),
    );
}
