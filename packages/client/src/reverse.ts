import { decide, withDeadline } from './decide.ts';
import { randomKey } from './retry.ts';
import type { Transport } from './transport.ts';
import { isReversalRejectionCode, type Reversal, type ReversalRejectionCode, type ReversalStatus } from './types.ts';

export interface ReverseRequest {
  questId: number;
  /** The payout to take points back from (`pay_…`). */
  payoutId: string;
  /** Points to take back; absent: the payout's whole unreversed remainder. */
  points?: number | undefined;
  /** Why, for the record (at most 500 characters). */
  reason?: string | undefined;
  /**
   * The reversal's identity: the same key always gets the same outcome, never a second reversal.
   * Default: a fresh random key, kept across this call's retries. Pass your own (e.g. derived from
   * the payout id) to make a retry of the whole call — after a crash, or a DEADLINE_EXCEEDED — safe too.
   */
  idempotencyKey?: string | undefined;
  /** Give up (DEADLINE_EXCEEDED, retryable) when undecided after this long. Default 60 s. */
  deadlineMs?: number | undefined;
  signal?: AbortSignal | undefined;
}

/**
 * The service's decision about a reversal: points taken back, or refused for this payout
 * (PAYOUT_ALREADY_REVERSED, REVERSAL_EXCEEDS_PAYOUT, PAYOUT_NOT_FOUND). Anything else (bad request,
 * wrong key, unavailable) throws a QuestError.
 */
export type ReverseOutcome =
  | { kind: 'reversal'; reversal: Reversal; replayed: boolean; idempotencyKey: string }
  | { kind: 'rejection'; code: ReversalRejectionCode; message: string; replayed: boolean; idempotencyKey: string };

export const DEFAULT_REVERSE_DEADLINE_MS = 60_000;

/**
 * POST /quests/{questId}/payouts/{payoutId}/reversals, exactly like `allocate`: one Idempotency-Key
 * kept across retries of transport errors, 429 and 5xx; a 202 followed to its decision; a reversal
 * the service gave up on sent again with the same key; all within the deadline.
 */
export async function reverse(t: Transport, req: ReverseRequest): Promise<ReverseOutcome> {
  const key = req.idempotencyKey ?? randomKey();
  const { questId, payoutId } = req;
  const body = {
    ...(req.points === undefined ? {} : { points: req.points }),
    ...(req.reason === undefined ? {} : { reason: req.reason }),
  };
  const decided = await withDeadline(
    'reversal',
    { deadlineMs: req.deadlineMs ?? DEFAULT_REVERSE_DEADLINE_MS, signal: req.signal },
    key,
    (signal) =>
      decide(
        t,
        {
          noun: 'reversal',
          operation: 'reversePayout',
          statusOperation: 'getReversal',
          failedCode: 'REVERSAL_FAILED',
          isRejection: isReversalRejectionCode,
          send: (s) =>
            t.api.POST('/quests/{questId}/payouts/{payoutId}/reversals', {
              params: { path: { questId, payoutId }, header: { 'idempotency-key': key } },
              body,
              signal: s,
            }),
          // A 200's reversal carries no status; a 202's does.
          read: (data): { done: Reversal } | { pending: ReversalStatus } =>
            'status' in data.reversal ? { pending: data.reversal } : { done: data.reversal },
          poll: (reversalId, s) =>
            t.api.GET('/quests/{questId}/reversals/{reversalId}', { params: { path: { questId, reversalId } }, signal: s }),
          status: (data) => data.reversal,
          completed: (status: ReversalStatus) => completedReversal(status),
        },
        key,
        signal,
      ),
  );
  return decided.kind === 'done'
    ? { kind: 'reversal', reversal: decided.value, replayed: decided.replayed, idempotencyKey: key }
    : {
        kind: 'rejection',
        code: decided.code as ReversalRejectionCode,
        message: decided.message,
        replayed: decided.replayed,
        idempotencyKey: key,
      };
}

/** The reversal a completed status describes; undefined when a field is missing. */
function completedReversal(s: ReversalStatus): Reversal | undefined {
  if (s.amount === undefined || s.reason === undefined || s.created_at === undefined || s.account === undefined) return undefined;
  return {
    id: s.id,
    payout_id: s.payout_id,
    quest_id: s.quest_id,
    amount: s.amount,
    reason: s.reason,
    created_at: s.created_at,
    account: s.account,
  };
}
