import { decide, withDeadline } from './decide.ts';
import { randomKey } from './retry.ts';
import type { Transport } from './transport.ts';
import { type Allocation, isRejectionCode, type Payout, type RejectionCode } from './types.ts';

export interface AllocateRequest {
  questId: number;
  /** Pass address, 0x + 40 hex digits in any case (the service answers it in checksum form). */
  address: string;
  points: number;
  /**
   * The credit's identity: the same key always gets the same outcome, never a second credit.
   * Default: a fresh random key, kept across this call's retries. Pass your own (an order id) to
   * make a retry of the whole call — after a crash, or a DEADLINE_EXCEEDED — safe too.
   */
  idempotencyKey?: string | undefined;
  /** Give up (DEADLINE_EXCEEDED, retryable) when undecided after this long. Default 60 s. */
  deadlineMs?: number | undefined;
  signal?: AbortSignal | undefined;
}

/** The service's decision about a credit. Anything else (bad request, wrong key, unavailable) throws a QuestError. */
export type AllocateOutcome =
  | { kind: 'payout'; payout: Payout; replayed: boolean; idempotencyKey: string }
  | { kind: 'rejection'; code: RejectionCode; message: string; replayed: boolean; idempotencyKey: string };

export const DEFAULT_ALLOCATE_DEADLINE_MS = 60_000;

/**
 * POST /quests/{questId} with an Idempotency-Key, retried on transport errors, 429 and 5xx with
 * that same key; a 202 is followed (GET of its status) to the decision; an allocation the service
 * gave up on (`failed`: nothing applied) is sent again with the same key. All within the deadline.
 */
export async function allocate(t: Transport, req: AllocateRequest): Promise<AllocateOutcome> {
  const key = req.idempotencyKey ?? randomKey();
  const { questId } = req;
  const decided = await withDeadline(
    'allocation',
    { deadlineMs: req.deadlineMs ?? DEFAULT_ALLOCATE_DEADLINE_MS, signal: req.signal },
    key,
    (signal) =>
      decide(
        t,
        {
          noun: 'allocation',
          operation: 'allocateQuestPoints',
          statusOperation: 'getAllocation',
          failedCode: 'ALLOCATION_FAILED',
          isRejection: isRejectionCode,
          send: (s) =>
            t.api.POST('/quests/{questId}', {
              params: { path: { questId }, header: { 'idempotency-key': key } },
              body: { address: req.address, points: req.points },
              signal: s,
            }),
          read: (data): { done: Payout } | { pending: Allocation } =>
            'payout' in data ? { done: data.payout } : { pending: data.allocation },
          poll: (allocationId, s) =>
            t.api.GET('/quests/{questId}/allocations/{allocationId}', { params: { path: { questId, allocationId } }, signal: s }),
          status: (data) => data.allocation,
          completed: (allocation: Allocation) => allocation.payout,
        },
        key,
        signal,
      ),
  );
  return decided.kind === 'done'
    ? { kind: 'payout', payout: decided.value, replayed: decided.replayed, idempotencyKey: key }
    : {
        kind: 'rejection',
        code: decided.code as RejectionCode,
        message: decided.message,
        replayed: decided.replayed,
        idempotencyKey: key,
      };
}
