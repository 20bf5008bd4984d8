import { type AllocationItem, DomainError, type PayoutView } from '@quest/domain';
import { countAllocation } from '../metrics.ts';
import type { AllocationView } from '../schemas/allocations.ts';
import { RequestPipeline, type SettledFor } from './pipeline.ts';
import { type Answer, refusal, replayedHeaders, success } from './answer.ts';
import type { Command } from './command.ts';
import { creditInput } from './inputs.ts';

export type CreditBody = { payout: PayoutView } | { allocation: AllocationView };

/** The one translation of a credit's outcome: 200 payout, 400 rejection, 503 failed, 202 pending. */
function creditAnswer(settled: SettledFor<AllocationItem>, questId: number, key: string): Answer<CreditBody> {
  switch (settled.status) {
    case 'completed':
      return success(200, { payout: settled.payout }, replayedHeaders(settled.replayed));
    case 'rejected':
      return refusal(new DomainError(settled.code), replayedHeaders(settled.replayed));
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
      });
      countAllocation(settled);
      return creditAnswer(settled, questId, key);
    },
  };
}
