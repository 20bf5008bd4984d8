import { JobAbandoned } from '@quest/domain';
import { BatchProgressMoved, classifyDbError, type Sql, withTimeout } from '@quest/db';

export interface HandlerDeps {
  sql: Sql;
  workerId: string;
  /** First pause between two attempts; doubles up to retryMaxMs. */
  retryBaseMs: number;
  retryMaxMs: number;
  /** A database attempt that has not settled by then is abandoned and retried. */
  attemptTimeoutMs: number;
  batchChunkSize: number;
  logger: {
    info?(obj: object, msg?: string): void;
    warn(obj: object, msg?: string): void;
    error(obj: object, msg?: string): void;
  };
}

/** Pause `ms`, or less when `signal` aborts meanwhile. */
const pause = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });

/**
 * Run `fn` until it succeeds or fails for a reason that retrying cannot change. Anything else —
 * connection loss, a restart, a timeout, a serialization failure, a conflict with an outcome
 * another worker committed, a database that is misconfigured for now — is retried inside the job,
 * with capped exponential backoff and a time limit per attempt, for as long as it takes: the job
 * keeps the head of its partition (a BullMQ retry would let later jobs overtake it), and nothing is
 * ever answered failed because the database was away. A worker stopped meanwhile leaves the job
 * active; BullMQ hands it to another worker, at the head of the queue, once its lock expires.
 * `fn` is told whether an earlier attempt may have committed (then it must read stored outcomes).
 * Returns undefined only for a permanent error. Once `signal` aborts (the worker abandoned the job:
 * it left the pool), no attempt starts any more: `JobAbandoned` is thrown instead.
 */
export async function withRetry<T>(
  deps: HandlerDeps,
  what: object,
  fn: (retry: boolean) => Promise<T>,
  signal?: AbortSignal,
): Promise<T | undefined> {
  for (let attempt = 1; ; attempt++) {
    if (signal?.aborted) throw new JobAbandoned();
    try {
      return await withTimeout(fn(attempt > 1), deps.attemptTimeoutMs);
    } catch (error) {
      if (error instanceof BatchProgressMoved) throw error;
      const kind = classifyDbError(error);
      switch (kind) {
        case 'transient':
        case 'conflict':
        case 'configuration': {
          const pauseMs = Math.min(deps.retryMaxMs, deps.retryBaseMs * 2 ** Math.min(attempt - 1, 20));
          const log = kind === 'configuration' ? deps.logger.error : deps.logger.warn;
          log.call(deps.logger, { ...what, err: error, attempt, kind, pauseMs }, `${kind} database error, retrying`);
          await pause(pauseMs, signal);
          continue;
        }
        case 'permanent':
          deps.logger.error({ ...what, err: error }, 'permanent error while applying allocations');
          return undefined;
        default: {
          const unreachable: never = kind;
          throw new Error(`unknown error kind ${unreachable}`);
        }
      }
    }
  }
}
