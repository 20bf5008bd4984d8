import { getAllocationStatus, type Sql } from '@quest/db';
import { type AllocationItem, DomainError, type PayoutView, type RequestOutcome } from '@quest/domain';
import { countAllocation } from '../metrics.ts';
import type { AllocationView } from '../schemas/allocations.ts';
import { RequestPipeline, type SettledFor } from '../services/requests.ts';
import { type Answer, refusal, success } from './answer.ts';
import type { Command } from './command.ts';
import { creditInput } from './inputs.ts';

export type CreditBody = { payout: PayoutView } | { allocation: AllocationView };

/** An allocation's outcome the database holds, as the worker would have answered it; undefined while undecided. */
async function storedCredit(sql: Sql, questId: number, key: string): Promise<RequestOutcome | undefined> {
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

const REPLAYED = { 'idempotent-replayed': 'true' } as const;

/** The one translation of a credit's outcome: 200 payout, 400 rejection, 503 failed, 202 pending. */
function creditAnswer(settled: SettledFor<AllocationItem>, questId: number, key: string): Answer<CreditBody> {
  switch (settled.status) {
    case 'completed':
      return success(200, { payout: settled.payout }, settled.replayed ? REPLAYED : {});
    case 'rejected':
      return refusal(new DomainError(settled.code), settled.replayed ? REPLAYED : {});
    case 'failed':
      return refusal(new DomainError('ALLOCATION_FAILED'));
    case 'pending': {
      const allocation: AllocationView = { id: key, status: 'pending', updated_at: new Date(settled.enqueuedAt).toISOString() };
      return success(202, { allocation }, { location: `/quests/${questId}/allocations/${key}` });
    }
  }
}

/** POST /quests/{questId} and every other way to credit one account: decided in the quest's order. */
export function creditCommand(pipeline: RequestPipeline): Command<typeof creditInput, CreditBody> {
  return {
    input: creditInput,
    flag: 'quests',
    quest: (input) => input.questId,
    cost: () => 1,
    async run({ ownerId, requestId }, { questId, points, address, idempotencyKey }) {
      const key = RequestPipeline.key(ownerId, questId, idempotencyKey, 'alc');
      const settled = await pipeline.submit({
        item: { key, questId, points, address, requestId },
        idempotencyKey,
        body: [address.toLowerCase(), points],
        stored: storedCredit,
      });
      countAllocation(settled);
      return creditAnswer(settled, questId, key);
    },
  };
}
