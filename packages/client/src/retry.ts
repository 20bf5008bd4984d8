/**
 * When to retry and how long to wait. Written here rather than taken from a retry library: the
 * policy is three lines of arithmetic, and it must honour the API's Retry-After and share one
 * attempt budget with the 202-following and batch-resuming loops, which a generic wrapper around
 * a single call does not see.
 */

export interface RetryPolicy {
  /** Attempts per request, the first included (≥ 1). */
  maxAttempts: number;
  /** Delay before the first retry; doubled for each further one. */
  baseDelayMs: number;
  /** Largest backoff delay (before Retry-After is applied). */
  maxDelayMs: number;
  /** A Retry-After longer than this is not waited out: the call fails at once, retryable. */
  maxRetryAfterMs: number;
}

/** Some fields of `T`, each of which may also be given as undefined (meaning: the default). */
export type Overrides<T> = { [K in keyof T]?: T[K] | undefined };

/** `defaults` with the fields `given` sets; a field given as undefined keeps its default. */
export function withDefaults<T extends object>(defaults: T, given: Overrides<T> | undefined): T {
  const out = { ...defaults };
  for (const [name, value] of Object.entries(given ?? {}))
    if (value !== undefined) (out as Record<string, unknown>)[name] = value;
  return out;
}

export const DEFAULT_RETRY: RetryPolicy = {
  maxAttempts: 8,
  baseDelayMs: 250,
  maxDelayMs: 8000,
  maxRetryAfterMs: 60_000,
};

/**
 * Delay before retry number `retry` (1-based): exponential backoff with equal jitter (half fixed,
 * half random, so clients that failed together do not come back together), and never before the
 * server's Retry-After, to which a little jitter is added for the same reason.
 */
export function backoffMs(retry: number, retryAfterMs: number | undefined, policy: RetryPolicy, random = Math.random): number {
  const base = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (retry - 1));
  const backoff = Math.round(base * (0.5 + random() / 2));
  if (retryAfterMs === undefined) return backoff;
  const spread = Math.round(Math.min(1000, retryAfterMs * 0.2) * random());
  return Math.max(backoff, retryAfterMs + spread);
}

/** Retry-After as milliseconds: delay-seconds or an HTTP-date (RFC 9110 §10.2.3); undefined when absent or unreadable. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | undefined {
  if (value === null) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  // An HTTP-date names its day and month; Date.parse alone would read '-5' as a year.
  const at = /[A-Za-z]/.test(text) ? Date.parse(text) : Number.NaN;
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** An answer worth retrying unchanged: the service did not decide (overloaded, unavailable, or a bug). */
export const isTransientStatus = (status: number) => status === 408 || status === 429 || status >= 500;

/** Wait `ms`, or reject with the signal's reason as soon as it aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Random bytes as base64url-like text: an Idempotency-Key nobody else will send. */
export function randomKey(bytes = 16): string {
  const buf = new Uint8Array(bytes);
  // getRandomValues exists in every browser and Node ≥ 20, also outside secure contexts (unlike randomUUID).
  globalThis.crypto.getRandomValues(buf);
  let out = '';
  for (const b of buf) out += b.toString(16).padStart(2, '0');
  return out;
}
