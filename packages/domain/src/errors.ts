/**
 * The closed catalogue of error codes the service emits. Every non-2xx response carries one of
 * these in its `code` field; `STATUS_BY_CODE` is exhaustive, so adding a code without deciding
 * its HTTP status fails the type check.
 */
export const ERROR_CODES = [
  'VALIDATION_FAILED',
  'UNSUPPORTED_MEDIA_TYPE',
  'PAYLOAD_TOO_LARGE',
  'ROUTE_NOT_FOUND',
  'METHOD_NOT_ALLOWED',
  'QUESTS_DISABLED',
  'CAMPAIGNS_DISABLED',
  'INVALID_API_KEY',
  'NOT_QUEST_OWNER',
  'ADMIN_TOKEN_INVALID',
  'QUEST_NOT_FOUND',
  'CAMPAIGN_NOT_FOUND',
  'ALLOCATION_NOT_FOUND',
  'BATCH_NOT_FOUND',
  'PAYOUT_NOT_FOUND',
  'REVERSAL_NOT_FOUND',
  'QUEST_NOT_ACTIVE',
  'ACTION_TYPE_INACTIVE',
  'INSUFFICIENT_POINTS',
  'ACCOUNT_NOT_FOUND',
  'BALANCE_LIMIT_EXCEEDED',
  'PAYOUT_ALREADY_REVERSED',
  'REVERSAL_EXCEEDS_PAYOUT',
  'IDEMPOTENCY_KEY_REUSED',
  'BATCH_TOO_LARGE',
  'RATE_LIMITED',
  'ALLOCATION_FAILED',
  'REVERSAL_FAILED',
  'QUEUE_UNAVAILABLE',
  'DATABASE_UNAVAILABLE',
  'INTERNAL_ERROR',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

export const STATUS_BY_CODE: { readonly [C in ErrorCode]: number } = {
  VALIDATION_FAILED: 400,
  // The spec describes every client-side failure of a request as 400 "bad request": a body that is
  // not JSON or too large is one, with its own code in the envelope.
  UNSUPPORTED_MEDIA_TYPE: 400,
  PAYLOAD_TOO_LARGE: 400,
  ROUTE_NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  QUESTS_DISABLED: 400,
  CAMPAIGNS_DISABLED: 400,
  INVALID_API_KEY: 401,
  NOT_QUEST_OWNER: 401,
  ADMIN_TOKEN_INVALID: 401,
  QUEST_NOT_FOUND: 404,
  CAMPAIGN_NOT_FOUND: 404,
  ALLOCATION_NOT_FOUND: 404,
  BATCH_NOT_FOUND: 404,
  PAYOUT_NOT_FOUND: 404,
  REVERSAL_NOT_FOUND: 404,
  QUEST_NOT_ACTIVE: 400,
  ACTION_TYPE_INACTIVE: 400,
  INSUFFICIENT_POINTS: 400,
  ACCOUNT_NOT_FOUND: 400,
  BALANCE_LIMIT_EXCEEDED: 400,
  PAYOUT_ALREADY_REVERSED: 400,
  REVERSAL_EXCEEDS_PAYOUT: 400,
  IDEMPOTENCY_KEY_REUSED: 400,
  BATCH_TOO_LARGE: 400,
  RATE_LIMITED: 429,
  ALLOCATION_FAILED: 503,
  REVERSAL_FAILED: 503,
  QUEUE_UNAVAILABLE: 503,
  DATABASE_UNAVAILABLE: 503,
  INTERNAL_ERROR: 500,
};

/** Default human-readable messages; call sites may give a more specific one. */
export const DEFAULT_MESSAGE: { readonly [C in ErrorCode]: string } = {
  VALIDATION_FAILED: 'The request is not valid.',
  UNSUPPORTED_MEDIA_TYPE: 'Send the body as application/json.',
  PAYLOAD_TOO_LARGE: 'The request body is too large.',
  ROUTE_NOT_FOUND: 'No such route.',
  METHOD_NOT_ALLOWED: 'Method not allowed on this route.',
  QUESTS_DISABLED: 'The quests feature is disabled.',
  CAMPAIGNS_DISABLED: 'The campaigns feature is disabled.',
  INVALID_API_KEY: 'The API key is missing, malformed, unknown or revoked.',
  NOT_QUEST_OWNER: 'The API key does not belong to the owner of this quest.',
  ADMIN_TOKEN_INVALID: 'The operator console needs the operator token (ADMIN_TOKEN).',
  QUEST_NOT_FOUND: 'Quest not found.',
  CAMPAIGN_NOT_FOUND: 'Campaign not found.',
  ALLOCATION_NOT_FOUND: 'Allocation not found.',
  BATCH_NOT_FOUND: 'Batch not found.',
  PAYOUT_NOT_FOUND: 'Payout not found in this quest.',
  REVERSAL_NOT_FOUND: 'Reversal not found.',
  QUEST_NOT_ACTIVE: 'The quest is not active: the current time is outside its start/end window.',
  ACTION_TYPE_INACTIVE: "The quest's action type is deactivated.",
  INSUFFICIENT_POINTS: "The requested points exceed the quest's remaining points.",
  ACCOUNT_NOT_FOUND: 'No account exists for this pass address.',
  BALANCE_LIMIT_EXCEEDED: "The credit would take the account's balance past its limit (2^53 - 1 points).",
  PAYOUT_ALREADY_REVERSED: 'The payout is already reversed in full.',
  REVERSAL_EXCEEDS_PAYOUT: "The points to reverse exceed the payout's unreversed remainder.",
  IDEMPOTENCY_KEY_REUSED: 'This Idempotency-Key was already used with a different request body.',
  BATCH_TOO_LARGE: 'The batch has too many allocations.',
  RATE_LIMITED: 'Too many requests.',
  ALLOCATION_FAILED: 'The allocation could not be processed; it was not applied. Retry later.',
  REVERSAL_FAILED: 'The reversal could not be processed; it was not applied. Retry later.',
  QUEUE_UNAVAILABLE: 'The allocation queue is unavailable. Retry later.',
  DATABASE_UNAVAILABLE: 'The database is unavailable. Retry later.',
  INTERNAL_ERROR: 'Internal server error.',
};

/**
 * Codes a decision can end in (business rejections, not failures): an allocation's, or a
 * reversal's (PAYOUT_ALREADY_REVERSED, REVERSAL_EXCEEDS_PAYOUT, and PAYOUT_NOT_FOUND, the one 404).
 */
export const REJECTION_CODES = [
  'QUEST_NOT_ACTIVE',
  'ACTION_TYPE_INACTIVE',
  'INSUFFICIENT_POINTS',
  'ACCOUNT_NOT_FOUND',
  'BALANCE_LIMIT_EXCEEDED',
  'IDEMPOTENCY_KEY_REUSED',
  'PAYOUT_ALREADY_REVERSED',
  'REVERSAL_EXCEEDS_PAYOUT',
  'PAYOUT_NOT_FOUND',
] as const satisfies readonly ErrorCode[];
export type RejectionCode = (typeof REJECTION_CODES)[number];

/** An expected failure with a stable code; thrown exceptions of any other type are bugs. */
export class DomainError extends Error {
  override readonly name = 'DomainError';
  readonly code: ErrorCode;
  readonly statusCode: number;
  readonly details: unknown;

  /** `cause`: what went wrong underneath (a Redis or database error), for the logs only. */
  constructor(code: ErrorCode, message?: string, details?: unknown, cause?: unknown) {
    super(message ?? DEFAULT_MESSAGE[code], cause === undefined ? undefined : { cause });
    this.code = code;
    this.statusCode = STATUS_BY_CODE[code];
    this.details = details;
  }
}

export const isDomainError = (e: unknown): e is DomainError => e instanceof DomainError;
