import { errorFromAnswer, QuestError } from './errors.ts';
import { randomKey, sleep } from './retry.ts';
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
  idempotencyKey?: string;
  /** Give up (DEADLINE_EXCEEDED, retryable) when undecided after this long. Default 60 s. */
  deadlineMs?: number;
  signal?: AbortSignal;
}

/** The service's decision about a credit. Anything else (bad request, wrong key, unavailable) throws a QuestError. */
export type AllocateOutcome =
  | { kind: 'payout'; payout: Payout; replayed: boolean; idempotencyKey: string }
  | { kind: 'rejection'; code: RejectionCode; message: string; replayed: boolean; idempotencyKey: string };

export const DEFAULT_ALLOCATE_DEADLINE_MS = 60_000;
/** Polls of a 202: from POLL_MIN_MS, ×1.5 each time, up to POLL_MAX_MS. */
const POLL_MIN_MS = 100;
const POLL_MAX_MS = 2000;

const REPLAYED = 'idempotent-replayed';

function rejection(error: { code: string; message: string }, replayed: boolean, key: string): AllocateOutcome | undefined {
  return isRejectionCode(error.code)
    ? { kind: 'rejection', code: error.code, message: error.message, replayed, idempotencyKey: key }
    : undefined;
}

/**
 * POST /quests/{questId} with an Idempotency-Key, retried on transport errors, 429 and 5xx with
 * that same key; a 202 is followed (GET of its status) to the decision; an allocation the service
 * gave up on (`failed`: nothing applied) is sent again with the same key. All within the deadline.
 */
export async function allocate(t: Transport, req: AllocateRequest): Promise<AllocateOutcome> {
  const key = req.idempotencyKey ?? randomKey();
  const deadlineMs = req.deadlineMs ?? DEFAULT_ALLOCATE_DEADLINE_MS;
  const deadline = AbortSignal.timeout(deadlineMs);
  const signal = req.signal ? AbortSignal.any([req.signal, deadline]) : deadline;
  try {
    return await decide(t, req, key, signal);
  } catch (error) {
    if (deadline.aborted && !req.signal?.aborted) {
      throw new QuestError(
        'DEADLINE_EXCEEDED',
        `allocation not decided within ${deadlineMs / 1000} s; call again with the same idempotencyKey`,
        {
          retryable: true,
          idempotencyKey: key,
          cause: error,
        },
      );
    }
    throw error;
  }
}

async function decide(t: Transport, req: AllocateRequest, key: string, signal: AbortSignal): Promise<AllocateOutcome> {
  const { questId } = req;
  for (let send = 1; ; send++) {
    const answer = await t.call(
      'allocateQuestPoints',
      (s) =>
        t.api.POST('/quests/{questId}', {
          params: { path: { questId }, header: { 'idempotency-key': key } },
          body: { address: req.address, points: req.points },
          signal: s,
        }),
      { signal, idempotencyKey: key },
    );
    const replayed = answer.response.headers.get(REPLAYED) === 'true';
    if (!answer.response.ok) {
      const body = answer.error as { code?: string; message?: string } | undefined;
      const decided = body?.code && rejection({ code: body.code, message: body.message ?? '' }, replayed, key);
      if (decided) return decided;
      throw errorFromAnswer(answer.response, answer.error, { retryable: false, idempotencyKey: key });
    }
    const data = t.ok(answer, 'allocateQuestPoints', key);
    if ('payout' in data) return { kind: 'payout', payout: data.payout, replayed, idempotencyKey: key };
    const final = await follow(t, questId, data.allocation, key, signal);
    if (final.status === 'completed' && final.payout)
      return { kind: 'payout', payout: final.payout, replayed, idempotencyKey: key };
    if (final.status === 'rejected' && final.error) {
      const decided = rejection(final.error, replayed, key);
      if (decided) return decided;
      throw new QuestError(final.error.code, final.error.message, { retryable: false, idempotencyKey: key });
    }
    // `failed`: the service gave up and applied nothing; sending it again with the key is safe.
    if (send >= t.policy.maxAttempts)
      throw new QuestError('ALLOCATION_FAILED', `the service gave up on this allocation ${send} times`, {
        retryable: true,
        idempotencyKey: key,
        attempts: send,
      });
  }
}

/** GET the allocation's status until it is no longer pending. */
async function follow(
  t: Transport,
  questId: number,
  accepted: Allocation,
  key: string,
  signal: AbortSignal,
): Promise<Allocation> {
  let delay = POLL_MIN_MS;
  let allocation = accepted;
  while (allocation.status === 'pending') {
    await sleep(delay, signal);
    delay = Math.min(POLL_MAX_MS, Math.round(delay * 1.5));
    const answer = await t.call(
      'getAllocation',
      (s) =>
        t.api.GET('/quests/{questId}/allocations/{allocationId}', {
          params: { path: { questId, allocationId: accepted.id } },
          signal: s,
        }),
      { signal, idempotencyKey: key },
    );
    allocation = t.ok(answer, 'getAllocation', key).allocation;
  }
  if ((allocation.status === 'completed' && !allocation.payout) || (allocation.status === 'rejected' && !allocation.error))
    throw new QuestError('BAD_RESPONSE', `allocation ${allocation.id} is ${allocation.status} without its outcome`, {
      retryable: false,
      idempotencyKey: key,
    });
  return allocation;
}
