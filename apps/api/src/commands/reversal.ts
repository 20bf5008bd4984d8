import { questHasPayout, type Sql } from '@quest/db';
import { DomainError, type ReversalItem, type ReversalView } from '@quest/domain';
import { countReversal } from '../metrics.ts';
import type { ReversalStatusView } from '../schemas/reversals.ts';
import { RequestPipeline, type SettledFor } from './pipeline.ts';
import { type Answer, refusal, replayedHeaders, success } from './answer.ts';
import type { Command } from './command.ts';
import { reverseInput } from './inputs.ts';

export type ReversalBody = { reversal: ReversalView } | { reversal: ReversalStatusView };

/** The one translation of a reversal's outcome: 200 reversal, 400 rejection, 503 failed, 202 pending. */
function reversalAnswer(settled: SettledFor<ReversalItem>, item: ReversalItem): Answer<ReversalBody> {
  switch (settled.status) {
    case 'reversed':
      return success(200, { reversal: settled.reversal }, replayedHeaders(settled.replayed));
    case 'rejected':
      return refusal(new DomainError(settled.code), replayedHeaders(settled.replayed));
    case 'failed':
      return refusal(new DomainError('REVERSAL_FAILED'));
    case 'pending': {
      const { key: id, payoutId: payout_id, questId: quest_id } = item;
      const updated_at = new Date(settled.enqueuedAt).toISOString();
      const reversal: ReversalStatusView = { id, status: 'pending', payout_id, quest_id, updated_at };
      return success(202, { reversal }, { location: `/quests/${quest_id}/reversals/${id}` });
    }
  }
}

/**
 * POST /quests/{questId}/payouts/{payoutId}/reversals and the console's reversal form: a payout of
 * the quest (404 otherwise, before anything is queued), then the shared request pipeline: the
 * reversal travels on the quest's partition with its allocations and is decided in their order.
 */
export function reverseCommand(deps: { sql: Sql; pipeline: RequestPipeline }): Command<typeof reverseInput, ReversalBody> {
  return {
    input: reverseInput,
    flag: 'quests',
    quest: (input) => input.questId,
    cost: () => 1,
    async run({ ownerId, requestId }, { questId, payoutId, points, reason, idempotencyKey }) {
      if (!(await questHasPayout(deps.sql, questId, payoutId))) throw new DomainError('PAYOUT_NOT_FOUND');
      const item: ReversalItem = {
        kind: 'reversal',
        key: RequestPipeline.key(ownerId, questId, idempotencyKey, 'rev'),
        questId,
        payoutId,
        ...(points === undefined ? {} : { points }),
        ...(reason === undefined ? {} : { reason }),
        requestId,
      };
      const settled = await deps.pipeline.submit({
        item,
        idempotencyKey,
        // One JSON array: an absent field and an empty reason stay different bodies.
        body: [JSON.stringify([payoutId, points ?? null, reason ?? null])],
      });
      countReversal(settled);
      return reversalAnswer(settled, item);
    },
  };
}
