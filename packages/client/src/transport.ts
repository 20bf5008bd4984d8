import createFetchClient, { type Client } from 'openapi-fetch';
import { errorFromAnswer, QuestError } from './errors.ts';
import {
  backoffMs,
  DEFAULT_RETRY,
  isTransientStatus,
  type Overrides,
  parseRetryAfter,
  type RetryPolicy,
  sleep,
  withDefaults,
} from './retry.ts';
import type { paths } from './types.ts';

/** One retry about to happen, for logs and progress displays. */
export interface RetryEvent {
  /** The API operation (its operationId: `allocateQuestPoints`, `createBatch`, `getBatch`, …). */
  operation: string;
  /** Which retry this is (1-based) and how many the policy allows. */
  retry: number;
  maxRetries: number;
  /** How long the client waits before it. */
  delayMs: number;
  /** The answer that is retried (absent when there was no answer: a network error or timeout). */
  status?: number | undefined;
  code: string;
  /** One line saying what went wrong. */
  message: string;
  idempotencyKey?: string | undefined;
}

export interface QuestClientOptions {
  /** Where the API is, e.g. `https://rewards.example.com` (a path prefix is kept). */
  baseUrl: string;
  /** The quest owner's key (`sk_…`), sent as `x-api-key`; the public reads work without. */
  apiKey?: string | undefined;
  /** A fetch of your own (tests, proxies, instrumentation); defaults to the global fetch. */
  fetch?: ((request: Request) => Promise<Response>) | undefined;
  /** Retry policy of every call (merged over DEFAULT_RETRY). */
  retry?: Overrides<RetryPolicy> | undefined;
  /** One attempt's limit, answer included; the API holds a batch POST up to BATCH_WAIT_MS (30 s). Default 120 s. */
  requestTimeoutMs?: number | undefined;
  /** Extra headers on every request (e.g. a user-agent where the platform allows one). */
  headers?: Record<string, string> | undefined;
  /** Told before every retry, of every call. */
  onRetry?: ((event: RetryEvent) => void) | undefined;
}

/** What one attempt of an openapi-fetch call resolves to. */
export interface Attempted<D> {
  data?: D;
  error?: unknown;
  response: Response;
}

/** A final answer: a 2xx, or a 4xx that no retry would change. */
export interface Answer<D> {
  data: D | undefined;
  error: unknown;
  response: Response;
}

export interface CallOptions {
  signal?: AbortSignal | undefined;
  idempotencyKey?: string | undefined;
  /** Once per attempt: the answer when there was one (any status), else null. */
  onAttempt?: ((response: Response | null) => void) | undefined;
  onRetry?: ((event: RetryEvent) => void) | undefined;
}

export const DEFAULT_REQUEST_TIMEOUT_MS = 120_000;

function describeNetworkError(error: unknown, timeoutMs: number): string {
  const e = error as { name?: string; message?: string; cause?: { code?: string; message?: string } } | null;
  if (e?.name === 'TimeoutError') return `no answer within ${timeoutMs / 1000} s`;
  const cause = e?.cause?.code ?? e?.cause?.message;
  return cause ? `${e?.message} (${cause})` : String(e?.message ?? error);
}

/**
 * The typed HTTP client (openapi-fetch over the generated paths) and the one retry loop every call
 * goes through: transport errors, 408, 429 and 5xx are retried, unchanged, with backoff and jitter,
 * honouring Retry-After, within the policy's attempts.
 */
export class Transport {
  readonly api: Client<paths>;
  readonly policy: RetryPolicy;
  readonly timeoutMs: number;
  private readonly o: QuestClientOptions;

  constructor(o: QuestClientOptions) {
    this.o = o;
    this.policy = withDefaults(DEFAULT_RETRY, o.retry);
    if (!(this.policy.maxAttempts >= 1)) throw new RangeError('retry.maxAttempts must be at least 1');
    this.timeoutMs = o.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    const headers: Record<string, string> = { accept: 'application/json', ...o.headers };
    if (o.apiKey !== undefined) headers['x-api-key'] = o.apiKey;
    this.api = createFetchClient<paths>({
      baseUrl: o.baseUrl,
      headers,
      ...(o.fetch ? { fetch: o.fetch } : {}),
    });
  }

  /**
   * Send with retries. `attempt` makes one request with the signal it is given. Resolves with the
   * first final answer; throws QuestError once the attempts are spent (retryable: true), or the
   * caller's abort reason.
   */
  async call<D>(
    operation: string,
    attempt: (signal: AbortSignal) => Promise<Attempted<D>>,
    o: CallOptions = {},
  ): Promise<Answer<D>> {
    const { policy } = this;
    for (let n = 1; ; n++) {
      const signal = o.signal
        ? AbortSignal.any([o.signal, AbortSignal.timeout(this.timeoutMs)])
        : AbortSignal.timeout(this.timeoutMs);
      let failure: { status?: number; code: string; message: string; retryAfterMs?: number | undefined; cause?: unknown };
      try {
        const res = await attempt(signal);
        o.onAttempt?.(res.response);
        if (!isTransientStatus(res.response.status)) return { data: res.data, error: res.error, response: res.response };
        const e = errorFromAnswer(res.response, res.error, { retryable: true });
        failure = {
          status: res.response.status,
          code: e.code,
          message: `${res.response.status} ${e.code}: ${e.message}`,
          retryAfterMs: parseRetryAfter(res.response.headers.get('retry-after')),
          cause: e,
        };
      } catch (error) {
        if (o.signal?.aborted) throw o.signal.reason;
        if (error instanceof SyntaxError) {
          throw new QuestError('BAD_RESPONSE', `${operation}: the answer is not the JSON the API documents`, {
            retryable: false,
            idempotencyKey: o.idempotencyKey,
            cause: error,
          });
        }
        o.onAttempt?.(null);
        failure = { code: 'NETWORK_ERROR', message: describeNetworkError(error, this.timeoutMs), cause: error };
      }
      const giveUp = (why: string) =>
        new QuestError(failure.code as QuestError['code'], `${operation}: ${why}; last: ${failure.message}`, {
          status: failure.status,
          retryable: true,
          idempotencyKey: o.idempotencyKey,
          attempts: n,
          cause: failure.cause,
          ...(failure.cause instanceof QuestError ? { requestId: failure.cause.requestId, details: failure.cause.details } : {}),
        });
      if (n >= policy.maxAttempts) throw giveUp(`gave up after ${n} attempts`);
      if (failure.retryAfterMs !== undefined && failure.retryAfterMs > policy.maxRetryAfterMs)
        throw giveUp(`the API asks to wait ${Math.ceil(failure.retryAfterMs / 1000)} s, more than retry.maxRetryAfterMs`);
      const delayMs = backoffMs(n, failure.retryAfterMs, policy);
      const event: RetryEvent = {
        operation,
        retry: n,
        maxRetries: policy.maxAttempts - 1,
        delayMs,
        status: failure.status,
        code: failure.code,
        message: failure.message,
        idempotencyKey: o.idempotencyKey,
      };
      o.onRetry?.(event);
      this.o.onRetry?.(event);
      await sleep(delayMs, o.signal);
    }
  }

  /** The data of a 2xx answer; a 4xx answer becomes its QuestError. */
  ok<D>(answer: Answer<D>, operation: string, idempotencyKey?: string): D {
    if (answer.response.ok) {
      if (answer.data === undefined)
        throw new QuestError('BAD_RESPONSE', `${operation}: ${answer.response.status} without a body`, {
          status: answer.response.status,
          retryable: false,
          idempotencyKey,
        });
      return answer.data;
    }
    throw errorFromAnswer(answer.response, answer.error, { retryable: false, idempotencyKey });
  }
}
