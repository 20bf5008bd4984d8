import { errorFromAnswer, QuestError } from './errors.ts';
import { sleep } from './retry.ts';
import type { Attempted, Transport } from './transport.ts';
import type { ErrorCode } from './types.ts';

/**
 * Drive one write request — an allocation or a reversal — to its decision: POST it with its
 * Idempotency-Key (the transport retries transport errors, 429 and 5xx with that same key), follow
 * a 202 by polling its status URL until it is no longer pending, and send again with the same key
 * a request the service gave up on (`failed`: nothing applied). All within the caller's deadline.
 * What differs between the kinds is in a `WriteKind`.
 */

/** What a status URL answers, whatever the kind. */
export interface StatusView {
  id: string;
  status: 'pending' | 'completed' | 'rejected' | 'failed';
  error?: { code: string; message: string } | undefined;
}

export interface WriteKind<X, Y, D, S extends StatusView> {
  /** 'allocation' or 'reversal', for messages. */
  noun: string;
  /** The operationIds of the POST and of the status GET (retry events and errors name them). */
  operation: string;
  statusOperation: string;
  /** Thrown once the service gave up `maxAttempts` times. */
  failedCode: ErrorCode;
  /** Codes that are a decision about this request (an outcome), not an error. */
  isRejection(code: string): boolean;
  send(signal: AbortSignal): Promise<Attempted<X>>;
  /** A 2xx of the POST: decided (200), or accepted (202) with its status. */
  read(data: X): { done: D } | { pending: S };
  poll(id: string, signal: AbortSignal): Promise<Attempted<Y>>;
  status(data: Y): S;
  /** The decision a completed status carries, or undefined when it lacks it. */
  completed(status: S): NoInfer<D> | undefined;
}

export type Decided<D> =
  | { kind: 'done'; value: D; replayed: boolean }
  | { kind: 'rejection'; code: string; message: string; replayed: boolean };

/** Polls of a 202: from POLL_MIN_MS, ×1.5 each time, up to POLL_MAX_MS. */
const POLL_MIN_MS = 100;
const POLL_MAX_MS = 2000;
const REPLAYED = 'idempotent-replayed';

/** Run `fn` with the deadline's signal; past it, a DEADLINE_EXCEEDED error naming the key to call again with. */
export async function withDeadline<T>(
  noun: string,
  req: { deadlineMs: number; signal?: AbortSignal | undefined },
  key: string,
  fn: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const deadline = AbortSignal.timeout(req.deadlineMs);
  const signal = req.signal ? AbortSignal.any([req.signal, deadline]) : deadline;
  try {
    return await fn(signal);
  } catch (error) {
    if (deadline.aborted && !req.signal?.aborted) {
      throw new QuestError(
        'DEADLINE_EXCEEDED',
        `${noun} not decided within ${req.deadlineMs / 1000} s; call again with the same idempotencyKey`,
        { retryable: true, idempotencyKey: key, cause: error },
      );
    }
    throw error;
  }
}

export async function decide<X, Y, D, S extends StatusView>(
  t: Transport,
  kind: WriteKind<X, Y, D, S>,
  key: string,
  signal: AbortSignal,
): Promise<Decided<D>> {
  for (let send = 1; ; send++) {
    const answer = await t.call(kind.operation, (s) => kind.send(s), { signal, idempotencyKey: key });
    const replayed = answer.response.headers.get(REPLAYED) === 'true';
    if (!answer.response.ok) {
      const body = answer.error as { code?: string; message?: string } | undefined;
      if (body?.code && kind.isRejection(body.code))
        return { kind: 'rejection', code: body.code, message: body.message ?? '', replayed };
      throw errorFromAnswer(answer.response, answer.error, { retryable: false, idempotencyKey: key });
    }
    const read = kind.read(t.ok(answer, kind.operation, key));
    if ('done' in read) return { kind: 'done', value: read.done, replayed };
    const final = await follow(t, kind, read.pending, key, signal);
    if (final.status === 'completed') return { kind: 'done', value: kind.completed(final)!, replayed };
    if (final.status === 'rejected') {
      const error = final.error!;
      if (kind.isRejection(error.code)) return { kind: 'rejection', code: error.code, message: error.message, replayed };
      throw new QuestError(error.code as ErrorCode, error.message, { retryable: false, idempotencyKey: key });
    }
    // `failed`: the service gave up and applied nothing; sending it again with the key is safe.
    if (send >= t.policy.maxAttempts)
      throw new QuestError(kind.failedCode, `the service gave up on this ${kind.noun} ${send} times`, {
        retryable: true,
        idempotencyKey: key,
        attempts: send,
      });
  }
}

/** GET the request's status until it is no longer pending. */
async function follow<X, Y, D, S extends StatusView>(
  t: Transport,
  kind: WriteKind<X, Y, D, S>,
  accepted: S,
  key: string,
  signal: AbortSignal,
): Promise<S> {
  let delay = POLL_MIN_MS;
  let status = accepted;
  while (status.status === 'pending') {
    await sleep(delay, signal);
    delay = Math.min(POLL_MAX_MS, Math.round(delay * 1.5));
    const answer = await t.call(kind.statusOperation, (s) => kind.poll(accepted.id, s), { signal, idempotencyKey: key });
    status = kind.status(t.ok(answer, kind.statusOperation, key));
  }
  if ((status.status === 'completed' && kind.completed(status) === undefined) || (status.status === 'rejected' && !status.error))
    throw new QuestError('BAD_RESPONSE', `${kind.noun} ${status.id} is ${status.status} without its outcome`, {
      retryable: false,
      idempotencyKey: key,
    });
  return status;
}
