import type { ErrorCode } from './types.ts';

/**
 * Codes of failures the client itself reports (the API's own codes are ErrorCode):
 * - NETWORK_ERROR: no answer (connection refused or reset, DNS, a request timeout), retries spent;
 * - DEADLINE_EXCEEDED: a 202 was still undecided at the caller's deadline;
 * - BAD_RESPONSE: an answer that is not what the API documents;
 * - STALLED: a batch showed no progress through every re-send;
 * - INVALID_STATE: a creditMany state that does not fit the call resuming from it.
 */
export type ClientErrorCode = 'NETWORK_ERROR' | 'DEADLINE_EXCEEDED' | 'BAD_RESPONSE' | 'STALLED' | 'INVALID_STATE';

export interface QuestErrorFields {
  /** HTTP status of the answer behind the error, when there was one. */
  status?: number | undefined;
  /** The API's x-request-id of that answer (quote it to the operator). */
  requestId?: string | undefined;
  /** The envelope's `details` (validation issues, `total` of IDEMPOTENCY_KEY_REUSED, …). */
  details?: unknown;
  /** True when the same call may succeed later: retrying it (with the same idempotency key) is safe. */
  retryable: boolean;
  /** The Idempotency-Key the request was sent with: retry with it, never with a new one. */
  idempotencyKey?: string | undefined;
  /** Attempts made before giving up. */
  attempts?: number | undefined;
  cause?: unknown;
}

/**
 * Every failure the client throws: the request was refused (a 4xx other than a credit decision),
 * or could not be answered within the retries or deadline. A credit the service decided not to make
 * is not an error: it is a `rejection` outcome.
 */
export class QuestError extends Error {
  override readonly name: string = 'QuestError';
  readonly code: ErrorCode | ClientErrorCode;
  readonly status: number | undefined;
  readonly requestId: string | undefined;
  readonly details: unknown;
  readonly retryable: boolean;
  readonly idempotencyKey: string | undefined;
  readonly attempts: number | undefined;

  constructor(code: ErrorCode | ClientErrorCode, message: string, fields: QuestErrorFields) {
    super(message, fields.cause === undefined ? undefined : { cause: fields.cause });
    this.code = code;
    this.status = fields.status;
    this.requestId = fields.requestId;
    this.details = fields.details;
    this.retryable = fields.retryable;
    this.idempotencyKey = fields.idempotencyKey;
    this.attempts = fields.attempts;
  }
}

interface Envelope {
  code?: unknown;
  message?: unknown;
  details?: unknown;
  requestId?: unknown;
}

/** The error a non-2xx answer stands for, from its envelope (or its status when it has none). */
export function errorFromAnswer(
  response: Response,
  body: unknown,
  fields: Omit<QuestErrorFields, 'status' | 'requestId' | 'details'>,
): QuestError {
  const envelope: Envelope = body !== null && typeof body === 'object' ? (body as Envelope) : {};
  const code = typeof envelope.code === 'string' ? (envelope.code as ErrorCode) : 'BAD_RESPONSE';
  const text = typeof body === 'string' ? body.slice(0, 200) : '';
  const message = typeof envelope.message === 'string' ? envelope.message : text || response.statusText || 'no message';
  return new QuestError(code, message, {
    ...fields,
    status: response.status,
    requestId: typeof envelope.requestId === 'string' ? envelope.requestId : (response.headers.get('x-request-id') ?? undefined),
    details: envelope.details,
  });
}
