import { STATUS_CODES } from 'node:http';
import { DEFAULT_MESSAGE, type ErrorCode, type ErrorResponse, errorResponseSchema, STATUS_BY_CODE } from '@quest/domain';

/**
 * How a route documents its answers beyond what its zod schemas say by themselves: response
 * descriptions, headers and examples (which the zod transform does not carry), and the error
 * responses with one example per code. document.ts carries them into the served document.
 */

/** An OpenAPI Header Object (schema as JSON Schema). */
export interface HeaderDoc {
  description: string;
  schema: Record<string, unknown>;
  required?: boolean;
}

/** An OpenAPI Example Object. */
export interface ExampleDoc {
  summary?: string;
  value: unknown;
}

/** A response entry of a route schema: a zod schema under `content`, with documentation around it. */
export interface ResponseDoc<S> {
  description: string;
  content: { 'application/json': { schema: S; example?: unknown; examples?: Record<string, ExampleDoc> } };
  headers?: Record<string, HeaderDoc>;
}

/** A documented success response (see ResponseDoc). */
export function documented<S>(
  schema: S,
  doc: { description: string; example?: unknown; headers?: Record<string, HeaderDoc> },
): ResponseDoc<S> {
  const media: ResponseDoc<S>['content']['application/json'] = { schema };
  if (doc.example !== undefined) media.example = doc.example;
  const response: ResponseDoc<S> = { description: doc.description, content: { 'application/json': media } };
  if (doc.headers) response.headers = doc.headers;
  return response;
}

// ---------------------------------------------------------------------------------------------
// Headers
// ---------------------------------------------------------------------------------------------

/** The request id used in every example. */
export const EXAMPLE_REQUEST_ID = '5b0e7f0a-3c1d-4f8e-9a52-1c7d2e6b9f40';

export const LOCATION_HEADER: HeaderDoc = {
  description: 'Where to poll for the outcome: the status URL of this allocation, batch or reversal, relative to the server.',
  required: true,
  schema: { $ref: '#/components/schemas/StatusUrl' },
};

export const PREFERENCE_APPLIED_HEADER: HeaderDoc = {
  description:
    'RFC 7240: `respond-async` when the request asked for it with `Prefer: respond-async` (this 202 came as soon as the batch was queued).',
  schema: { type: 'string', enum: ['respond-async'] },
};

export const IDEMPOTENT_REPLAYED_HEADER: HeaderDoc = {
  description:
    'Present, and `true`, when this answer replays an outcome decided earlier for the same Idempotency-Key ' +
    '(by an earlier request with that key) instead of deciding now; absent on an answer decided by this request. ' +
    'For a batch: the batch was created by an earlier request with this key, and this answer reports it (resuming it if it had stopped).',
  schema: { type: 'string', enum: ['true'] },
};

export const REQUEST_ID_HEADER: HeaderDoc = {
  description: "The request id: the client's own `x-request-id` when sane (1–128 of `A-Za-z0-9._:-`), else a fresh UUID.",
  required: true,
  schema: { type: 'string', example: EXAMPLE_REQUEST_ID },
};

export const RETRY_AFTER_HEADER: HeaderDoc = {
  description: 'Seconds to wait before retrying.',
  schema: { type: 'integer', minimum: 0, example: 1 },
};

export const RATE_LIMIT_HEADERS: Record<string, HeaderDoc> = {
  'x-ratelimit-limit': {
    description: 'Requests (or allocation items) allowed per window.',
    schema: { type: 'integer', minimum: 0 },
  },
  'x-ratelimit-remaining': { description: 'What is left of the limit in this window.', schema: { type: 'integer', minimum: 0 } },
  'x-ratelimit-reset': { description: 'Seconds until the window resets.', schema: { type: 'integer', minimum: 0 } },
};

// ---------------------------------------------------------------------------------------------
// Error responses: the envelope, with one example per code the route can answer with that status
// ---------------------------------------------------------------------------------------------

/** An example answer with a more specific message or details than the code's default. */
export interface ErrorExample {
  code: ErrorCode;
  message?: string;
  details?: unknown;
  summary?: string;
}

/** Messages and details as the service really words them, for codes whose default says little. */
const TYPICAL: Partial<Record<ErrorCode, Omit<ErrorExample, 'code'>>> = {
  VALIDATION_FAILED: {
    message: 'Invalid request: body.points: Too small: expected number to be >=1',
    details: [{ location: 'body', path: 'points', code: 'too_small', message: 'Too small: expected number to be >=1' }],
  },
  ROUTE_NOT_FOUND: { message: 'No route GET /quest/7.' },
  RATE_LIMITED: { message: 'Rate limit exceeded; retry in 42 s.' },
  BATCH_TOO_LARGE: { message: 'A batch holds at most 10000 allocations; this one has 12000.' },
};

function exampleValue(status: number, spec: ErrorExample): ErrorResponse {
  const typical = TYPICAL[spec.code] ?? {};
  const body: ErrorResponse = {
    statusCode: status,
    error: STATUS_CODES[status] ?? 'Error',
    code: spec.code,
    message: spec.message ?? typical.message ?? DEFAULT_MESSAGE[spec.code],
    requestId: EXAMPLE_REQUEST_ID,
  };
  const details = 'details' in spec ? spec.details : typical.details;
  if (details !== undefined) body.details = details;
  return body;
}

type ErrorSpec = { description: string; codes: readonly (ErrorCode | ErrorExample)[]; headers?: Record<string, HeaderDoc> };

const STANDARD_ERRORS = {
  429: {
    description:
      'RATE_LIMITED: over a rate limit (per client address, API key, owner allocation items, or failed authentications; see docs/api.md). ' +
      'Retry-After says when to retry; x-ratelimit-limit, -remaining and -reset describe the limit.',
    codes: ['RATE_LIMITED'],
  },
  500: {
    description: 'INTERNAL_ERROR: unexpected server error (logged with the request id; the message never carries internals).',
    codes: ['INTERNAL_ERROR'],
  },
  503: {
    description: 'DATABASE_UNAVAILABLE: PostgreSQL is unreachable; retry later (Retry-After).',
    codes: ['DATABASE_UNAVAILABLE'],
  },
} as const satisfies Record<number, ErrorSpec>;

type ErrorResponseDoc = ResponseDoc<typeof errorResponseSchema>;

/**
 * Response-schema entries documenting the error statuses of a route: the envelope schema, a
 * description of when each happens, and an example per code listed (the first is the default).
 * 429, 500 and 503 are added unless given, or left out with `omit`. Throws when a code is listed
 * under a status it is never answered with, so the document cannot drift from STATUS_BY_CODE.
 */
export function errorResponses<const S extends number, const O extends keyof typeof STANDARD_ERRORS = never>(
  specs: Record<S, ErrorSpec>,
  opts: { omit?: readonly O[] } = {},
): Record<S | Exclude<keyof typeof STANDARD_ERRORS, O>, ErrorResponseDoc> {
  const all: Record<number, ErrorSpec> = { ...STANDARD_ERRORS, ...specs };
  for (const status of opts.omit ?? []) if (!(status in specs)) delete all[status];
  return Object.fromEntries(
    Object.entries(all).map(([key, spec]) => {
      const status = Number(key);
      const examples: Record<string, ExampleDoc> = {};
      for (const entry of spec.codes) {
        const example = typeof entry === 'string' ? { code: entry } : entry;
        if (STATUS_BY_CODE[example.code] !== status)
          throw new Error(`${example.code} is answered ${STATUS_BY_CODE[example.code]}, not ${status}`);
        let name: string = example.code;
        for (let n = 2; name in examples; n++) name = `${example.code}_${n}`;
        examples[name] = {
          summary: example.summary ?? DEFAULT_MESSAGE[example.code],
          value: exampleValue(status, example),
        };
      }
      const response: ErrorResponseDoc = {
        description: spec.description,
        content: { 'application/json': { schema: errorResponseSchema, examples } },
      };
      if (spec.headers) response.headers = spec.headers;
      return [status, response];
    }),
  ) as Record<S | Exclude<keyof typeof STANDARD_ERRORS, O>, ErrorResponseDoc>;
}
