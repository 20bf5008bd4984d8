import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';

/**
 * The batches API as `quest-admin credit` uses it: one HTTP client with bounded retries of
 * transient failures, the answer shapes, and the errors a run can stop with.
 */

/** Results per page when following a 202 (the API's maximum). */
export const RESULTS_PAGE_SIZE = 1000;
/** Attempts per request (and resumes per batch) before the run gives up. */
export const MAX_ATTEMPTS = 8;
/** One request; the API itself holds a batch POST for up to BATCH_WAIT_MS (30 s by default). */
export const REQUEST_TIMEOUT_MS = 120_000;

/** Why the run stopped; `code` is the API's error code where there is one. */
export class CreditStop extends Error {
  /** The --batch-size a re-run must use, when the API told (a refused batch 1). */
  batchSize?: number;

  constructor(
    readonly code: string,
    message: string,
    readonly line?: number,
  ) {
    super(message);
  }
}

/** A failure worth retrying with the same Idempotency-Key: 5xx, 429, timeout, network. */
export class Transient extends Error {
  constructor(
    message: string,
    readonly retryAfterMs = 0,
  ) {
    super(message);
  }
}

/** A 4xx (other than 408/429): the request as sent will never succeed. */
export class Refused extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: unknown,
  ) {
    super(message);
  }
}

const resultSchema = z.object({
  index: z.number().int().nonnegative(),
  status: z.enum(['completed', 'rejected']),
  error: z.object({ code: z.string() }).optional(),
});
export type BatchItemResult = z.infer<typeof resultSchema>;
const batchAnswerSchema = z.object({
  batch: z.object({
    id: z.string(),
    status: z.enum(['pending', 'processing', 'completed', 'failed']),
    total: z.number().int(),
    processed: z.number().int(),
    updated_at: z.string().optional(),
    results: z.array(resultSchema).optional(),
  }),
});
export type BatchAnswer = z.infer<typeof batchAnswerSchema>['batch'];

export function parseAnswer(json: unknown, what: string): BatchAnswer {
  const parsed = batchAnswerSchema.safeParse(json);
  if (!parsed.success) throw new CreditStop('BAD_RESPONSE', `${what}: unexpected answer from the API`);
  return parsed.data.batch;
}

/** Delay before retry `attempt` (1-based): exponential from 250 ms, capped at 8 s, jittered; at least Retry-After. */
export function backoffMs(attempt: number, retryAfterMs = 0, random: () => number = Math.random): number {
  const base = Math.min(8000, 250 * 2 ** (attempt - 1));
  return Math.min(30_000, Math.max(retryAfterMs, Math.round(base * (0.5 + random() / 2))));
}

/** Index of the batch item a VALIDATION_FAILED answer names (`details[].path` like `allocations.37.address`). */
export function itemIndexFromDetails(details: unknown): number | undefined {
  if (!Array.isArray(details)) return undefined;
  for (const issue of details) {
    const path = (issue as { path?: unknown } | null)?.path;
    const m = typeof path === 'string' ? /(?:^|\.)allocations\.(\d+)(?:\.|$)/.exec(path) : null;
    if (m) return Number(m[1]);
  }
  return undefined;
}

function describeNetworkError(error: unknown): string {
  const e = error as { name?: string; message?: string; cause?: { code?: string; message?: string } };
  if (e?.name === 'TimeoutError') return `no answer within ${REQUEST_TIMEOUT_MS / 1000} s`;
  const cause = e?.cause?.code ?? e?.cause?.message;
  return cause ? `${e.message} (${cause})` : String(e?.message ?? error);
}

export interface Answer {
  status: number;
  headers: Headers;
  json: unknown;
}

export interface RequestOptions {
  body?: string;
  headers?: Record<string, string>;
  /** Called once per attempt: with the answer's headers when the API answered (any status), else null. */
  onAttempt?: (headers: Headers | null) => void;
}

export class Api {
  constructor(
    private readonly baseUrl: string,
    private readonly apiKey: string,
    readonly signal: AbortSignal,
    readonly onRetry: (message: string) => void = () => {},
  ) {}

  /** One attempt. Resolves with a 2xx answer; throws Transient, Refused, or the abort reason. */
  private async once(method: 'GET' | 'POST', url: string, o: RequestOptions): Promise<Answer> {
    let res: Response;
    let text: string;
    try {
      res = await fetch(url, {
        method,
        body: o.body,
        headers: {
          accept: 'application/json',
          'user-agent': 'quest-admin-credit',
          'x-api-key': this.apiKey,
          ...(o.body === undefined ? {} : { 'content-type': 'application/json' }),
          ...o.headers,
        },
        signal: AbortSignal.any([this.signal, AbortSignal.timeout(REQUEST_TIMEOUT_MS)]),
      });
      text = await res.text();
    } catch (error) {
      if (this.signal.aborted) throw this.signal.reason;
      o.onAttempt?.(null);
      throw new Transient(`${method} ${url}: ${describeNetworkError(error)}`);
    }
    o.onAttempt?.(res.headers);
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    if (res.status >= 200 && res.status < 300) {
      if (json === undefined)
        throw new CreditStop('BAD_RESPONSE', `${method} ${url}: ${res.status} with a body that is not JSON`);
      return { status: res.status, headers: res.headers, json };
    }
    const envelope = (json ?? {}) as { code?: unknown; message?: unknown; details?: unknown };
    const code = typeof envelope.code === 'string' ? envelope.code : `HTTP_${res.status}`;
    const message = typeof envelope.message === 'string' ? envelope.message : text.slice(0, 200) || res.statusText;
    if (res.status >= 500 || res.status === 429 || res.status === 408) {
      const retryAfter = Number(res.headers.get('retry-after'));
      throw new Transient(`${res.status} ${code}: ${message}`, Number.isFinite(retryAfter) ? retryAfter * 1000 : 0);
    }
    throw new Refused(res.status, code, message, envelope.details);
  }

  /** With bounded retries of transient failures; `label` names the request in the final error. */
  async request(label: string, method: 'GET' | 'POST', url: string, o: RequestOptions = {}): Promise<Answer> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.once(method, url, o);
      } catch (error) {
        if (!(error instanceof Transient)) throw error;
        if (attempt >= MAX_ATTEMPTS)
          throw new CreditStop('API_UNAVAILABLE', `${label}: gave up after ${MAX_ATTEMPTS} attempts; last: ${error.message}`);
        const delay = backoffMs(attempt, error.retryAfterMs);
        this.onRetry(`${label}: ${error.message}; retry ${attempt} of ${MAX_ATTEMPTS - 1} in ${(delay / 1000).toFixed(1)} s`);
        await sleep(delay, undefined, { signal: this.signal });
      }
    }
  }

  /** An API path under the base URL (which may carry a path prefix). */
  url(path: string): string {
    return `${this.baseUrl}${path}`;
  }

  /** A Location header (absolute, or relative to the base URL's origin, as HTTP has it) with a results page. */
  page(location: string, offset: number): string {
    const url = new URL(location, `${this.baseUrl}/`);
    url.searchParams.set('limit', String(RESULTS_PAGE_SIZE));
    url.searchParams.set('offset', String(offset));
    return url.toString();
  }
}
