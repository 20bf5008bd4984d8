import { DEFAULT_MESSAGE, type ErrorCode, errorCodeSchema, INT32_MAX, intQueryParam } from '@quest/domain';
import { z } from 'zod';
import type { ErrorExample } from '../openapi/responses.ts';

/** What the write routes share: their headers, the points field, an outcome's error, the auth errors. */

export const idempotencyHeaders = z.object({
  'idempotency-key': z.string().min(1).max(255).optional().meta({
    example: 'order-1234',
    description:
      'Optional. The same owner + quest + key gets the original outcome, never a second credit. Kept as long as the outcome (at least 24 h; in practice forever).',
  }),
  'x-api-key': z.string().optional().meta({ description: 'API key of the quest owner (sk_…).' }),
});

export const apiKeyHeaders = idempotencyHeaders.pick({ 'x-api-key': true });

export const points = z
  .number()
  .int()
  .min(1)
  .max(Number.MAX_SAFE_INTEGER)
  .meta({ description: 'Points to allocate: a positive integer.' });

/** A UTF-16 code unit of a surrogate pair without its other half (not encodable as UTF-8). */
const UNPAIRED_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * Text the service can keep as it was sent: no NUL (PostgreSQL's text cannot hold one) and no
 * unpaired surrogate (UTF-8 cannot encode one). Every free-text field of a request is `freeText`.
 */
export const isStorableText = (text: string): boolean => !text.includes('\u0000') && !UNPAIRED_SURROGATE.test(text);

export const FREE_TEXT_MESSAGE = 'must not contain a NUL character or an unpaired surrogate';

/** A free-text field of at most `max` characters: refused with a 400 when it is not storable text. */
export const freeText = (max: number) => z.string().max(max).refine(isStorableText, { message: FREE_TEXT_MESSAGE });

export const count = (description: string) => z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).meta({ description });
export const timestamp = (description: string, example: string) => z.iso.datetime().meta({ description, example });

export const errorView = z
  .object({
    code: errorCodeSchema,
    message: z.string().meta({ example: DEFAULT_MESSAGE.INSUFFICIENT_POINTS }),
  })
  .meta({
    id: 'OutcomeError',
    description:
      'Why an allocation or batch item was not applied: a decision (QUEST_NOT_ACTIVE, ACTION_TYPE_INACTIVE, INSUFFICIENT_POINTS, ' +
      'ACCOUNT_NOT_FOUND, BALANCE_LIMIT_EXCEEDED, IDEMPOTENCY_KEY_REUSED) or ALLOCATION_FAILED (given up; nothing applied).',
  });

/** An outcome's error as answered: its code and the code's message. */
export const errorOf = (code: string) => ({ code: code as ErrorCode, message: DEFAULT_MESSAGE[code as ErrorCode] ?? code });

/** The errors of the owner routes: how the key can fail. */
export const AUTH_ERRORS = {
  description: 'INVALID_API_KEY or NOT_QUEST_OWNER.',
  codes: ['INVALID_API_KEY', 'NOT_QUEST_OWNER'],
} as const;

/** A VALIDATION_FAILED example for a body field. */
export const validationExample = (path: string, message: string): ErrorExample => ({
  code: 'VALIDATION_FAILED',
  message: `Invalid request: body.${path}: ${message}`,
  details: [{ location: 'body', path, code: 'invalid_format', message }],
});

// Digits only, like every other route's query parameters (intQueryParam), never z.coerce.
export const pageQuery = z.object({
  limit: intQueryParam({ default: 100, min: 1, max: 1000, description: 'Results per page (1..1000, default 100).' }),
  offset: intQueryParam({ default: 0, min: 0, max: INT32_MAX, description: 'Results to skip (default 0).' }),
});
