import { z } from 'zod';
import { passAddressSchema } from './address.ts';
import { ERROR_CODES } from './errors.ts';
import { payoutViewSchema } from './jobs.ts';

/**
 * The HTTP views of the read API and the shapes of their inputs. One zod schema per shape feeds
 * request validation, response serialization and the generated OpenAPI document, so the three
 * cannot drift apart. Schemas with an `id` become named components of the OpenAPI document.
 */

/** Ids are Postgres `integer` columns. */
export const INT32_MAX = 2_147_483_647;

const timestamp = (description: string) => z.iso.datetime().meta({ description, example: '2025-03-01T12:00:00.000Z' });
const timestampMs = (description: string) =>
  z.iso.datetime({ precision: 3 }).meta({ description, example: '2025-03-01T12:00:00.123Z' });
const id = (description: string) => z.number().int().positive().max(INT32_MAX).meta({ description });
const points = (description: string) => z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER).meta({ description });

/**
 * A positive 32-bit id in a path. Digits only: no sign, exponent, fraction, leading zero or
 * blank, so `1e3`, `1.0`, `-1`, `0` and `01` are refused instead of being coerced. Documented as
 * an integer, which is what it is on the wire.
 */
export const idPathParamSchema = z
  .string()
  .regex(/^[1-9][0-9]{0,9}$/, 'must be a positive integer')
  .pipe(z.coerce.number<string>().int().max(INT32_MAX))
  .meta({ type: 'integer', minimum: 1, maximum: INT32_MAX, pattern: undefined });

/** An integer in a query string with bounds and a default, digits only (see idPathParamSchema). */
export function intQueryParam(opts: { default: number; min: number; max: number; description: string }) {
  return z
    .string()
    .regex(/^(0|[1-9][0-9]{0,9})$/, 'must be a non-negative integer')
    .pipe(z.coerce.number<string>().int().min(opts.min).max(opts.max))
    .default(opts.default)
    .meta({ type: 'integer', minimum: opts.min, maximum: opts.max, pattern: undefined, description: opts.description });
}

/**
 * Longest id a path may carry, as documented; the router's `maxParamLength` is set to it so an
 * over-long id is a VALIDATION_FAILED answer from the schema, not the router's own 400 or 404.
 */
export const ID_PARAM_MAX_LENGTH = 200;

/** A lowercased ULID (Crockford base32 without i, l, o, u; first character 0–7), as `newId` makes. */
const ULID = '[0-7][0-9a-hjkmnp-tv-z]{25}';
/** The 32 base64url characters of a key derived from an Idempotency-Key (`idempotentRequestKey`). */
const DERIVED = 'k[A-Za-z0-9_-]{32}';
const requestKey = (prefix: 'alc' | 'bat' | 'rev') => `${prefix}_(?:${ULID}|${DERIVED})`;
/** A batch item's allocation id: `<batch id>:<index>`, the index without sign or leading zero. */
const BATCH_ITEM = `${requestKey('bat')}:(?:0|[1-9][0-9]{0,8})`;

/**
 * Ids in paths, by their real format, so anything else (a NUL byte, spaces, another prefix) is a
 * 400 before any lookup. Shared by every route that takes one, so all routes agree.
 */
export const allocationIdParamSchema = z
  .string()
  .max(ID_PARAM_MAX_LENGTH)
  .regex(new RegExp(`^(?:${requestKey('alc')}|${BATCH_ITEM})$`), 'must be an allocation id (alc_… or <batch id>:<index>)')
  .meta({
    description: 'Allocation id: `alc_…` as answered by POST /quests/{questId}, or `<batch id>:<index>` for a batch item.',
  });

export const batchIdParamSchema = z
  .string()
  .max(ID_PARAM_MAX_LENGTH)
  .regex(new RegExp(`^${requestKey('bat')}$`), 'must be a batch id (bat_…)')
  .meta({ description: 'Batch id (`bat_…`) as answered by POST /quests/{questId}/batches.' });

export const payoutIdParamSchema = z
  .string()
  .max(ID_PARAM_MAX_LENGTH)
  .regex(new RegExp(`^pay_${ULID}$`), 'must be a payout id (pay_…)')
  .meta({ description: 'Payout id (`pay_…`), as in the payout of POST /quests/{questId} or GET /quests/{questId}.' });

export const reversalIdParamSchema = z
  .string()
  .max(ID_PARAM_MAX_LENGTH)
  .regex(new RegExp(`^${requestKey('rev')}$`), 'must be a reversal id (rev_…)')
  .meta({ description: 'Reversal id (`rev_…`) as answered by POST /quests/{questId}/payouts/{payoutId}/reversals, 200 or 202.' });

export const PAGE_LIMIT_DEFAULT = 20;
export const PAGE_LIMIT_MAX = 100;

export const questIdParamsSchema = z.object({ questId: idPathParamSchema.meta({ description: 'Quest id.' }) });
export const campaignIdParamsSchema = z.object({ id: idPathParamSchema.meta({ description: 'Campaign id.' }) });

const limitParam = (what: string) =>
  intQueryParam({
    default: PAGE_LIMIT_DEFAULT,
    min: 1,
    max: PAGE_LIMIT_MAX,
    description: `Number of ${what} to return, 1..${PAGE_LIMIT_MAX}.`,
  });
const offsetParam = (what: string) =>
  intQueryParam({ default: 0, min: 0, max: INT32_MAX, description: `Number of ${what} to skip.` });

export const questDetailQuerySchema = z.object({ limit: limitParam('payouts'), offset: offsetParam('payouts') });

export const publicQuestsQuerySchema = z.object({
  owner: passAddressSchema.optional().meta({
    description: 'Only the quests of the owner with this pass address (any letter case; compared in checksum form).',
  }),
  limit: limitParam('quests'),
  offset: offsetParam('quests'),
});

export const payoutSchema = payoutViewSchema.meta({ id: 'Payout', description: 'A credit of points to one account.' });

export const questDetailViewSchema = z
  .object({
    id: id('Quest id.'),
    name: z.string(),
    description: z.string(),
    total_points: points('Total points budget.'),
    points_remaining: points('Budget still unallocated.'),
    start: timestamp('Start of the active window (inclusive), UTC.'),
    end: timestamp('End of the active window (exclusive), UTC.'),
    is_active: z
      .boolean()
      .meta({ description: "True when the current time is inside [start, end) and the quest's action type is active." }),
    payouts: z.array(payoutSchema).meta({ description: 'Payouts of the quest, newest first, paginated by limit and offset.' }),
  })
  .meta({ id: 'QuestDetail', description: 'A quest as its owner sees it.' });

export const campaignSummarySchema = z
  .object({ id: id('Campaign id.'), name: z.string(), description: z.string() })
  .meta({ id: 'CampaignSummary' });

export const publicQuestViewSchema = z
  .object({
    id: id('Quest id.'),
    name: z.string(),
    description: z.string(),
    total_points: points('Total points budget.'),
    expected_points_per_completion: points('Points a completion is expected to earn.'),
    start: timestamp('Start of the active window (inclusive), UTC.'),
    end: timestamp('End of the active window (exclusive), UTC.'),
    campaign: campaignSummarySchema.nullable().meta({ description: 'The campaign the quest belongs to; null when none.' }),
  })
  .meta({ id: 'PublicQuest', description: 'A public quest, as listed by GET /quests.' });

export const publicQuestListSchema = z
  .array(publicQuestViewSchema)
  .meta({ description: 'Public quests in ascending id order, paginated by limit and offset.' });

export const campaignQuestViewSchema = z
  .object({
    id: id('Quest id.'),
    name: z.string(),
    created_at: timestamp('Creation time, UTC.'),
    updated_at: timestamp('Last update time, UTC.'),
    description: z.string(),
    start: timestamp('Start of the active window (inclusive), UTC.'),
    end: timestamp('End of the active window (exclusive), UTC.'),
    is_public: z.boolean(),
    total_points: points('Total points budget.'),
    expected_points_per_completion: points('Points a completion is expected to earn.'),
    owner_id: z.string().meta({ description: 'Owner identifier (`own_…`).' }),
    campaign_id: id('Id of the campaign.'),
  })
  .meta({ id: 'CampaignQuest', description: 'A quest embedded in its campaign.' });

export const campaignViewSchema = z
  .object({
    id: id('Campaign id.'),
    created_at: timestampMs('Creation time, UTC, with milliseconds.'),
    updated_at: timestampMs('Last update time, UTC, with milliseconds.'),
    name: z.string(),
    description: z.string(),
    start: timestamp('Start of the campaign, UTC.'),
    end: timestamp('End of the campaign, UTC.'),
    is_active: z.boolean().meta({ description: 'Whether the operator has the campaign switched on.' }),
    external_app_id: z
      .string()
      .nullable()
      .meta({ description: 'Identifier of the linked external application; null when none is linked.' }),
    quests: z
      .array(campaignQuestViewSchema)
      .meta({ description: 'The public quests of the campaign, in ascending id order. Private quests are not listed.' }),
  })
  .meta({ id: 'Campaign', description: 'A campaign and its public quests.' });

/** The closed set of error codes, as a named enum so generated clients get a type for it. */
export const errorCodeSchema = z.enum(ERROR_CODES).meta({
  id: 'ErrorCode',
  description: 'Stable machine-readable error code; docs/api.md lists each with its HTTP status and when it happens.',
  example: 'INSUFFICIENT_POINTS',
});

/** The body of every non-2xx response. */
export const errorResponseSchema = z
  .object({
    statusCode: z.number().int().min(400).max(599).meta({ description: 'The HTTP status code, repeated.', example: 400 }),
    error: z.string().meta({ description: 'The HTTP reason phrase.', example: 'Bad Request' }),
    code: errorCodeSchema,
    message: z.string().meta({
      description: 'Human-readable explanation. 5xx messages never carry internals.',
      example: "The requested points exceed the quest's remaining points.",
    }),
    requestId: z.string().meta({
      description: 'The request id, also sent in the x-request-id response header.',
      example: '5b0e7f0a-3c1d-4f8e-9a52-1c7d2e6b9f40',
    }),
    details: z.unknown().optional().meta({
      description: 'Extra, code-specific information, e.g. the list of validation issues for VALIDATION_FAILED.',
    }),
  })
  .meta({ id: 'ErrorResponse', description: 'Error envelope of every non-2xx response.' });

export const healthViewSchema = z.object({ status: z.literal('ok') }).meta({ id: 'Health' });

export const READINESS_CHECKS = ['database', 'queue'] as const;
export type ReadinessCheck = (typeof READINESS_CHECKS)[number];
export const readinessChecksSchema = z
  .object({ database: z.enum(['ok', 'unavailable']), queue: z.enum(['ok', 'unavailable']) })
  .meta({ id: 'ReadinessChecks' });
export const readinessViewSchema = z
  .object({
    status: z.literal('ok'),
    checks: readinessChecksSchema,
    workers: z.number().int().min(0).meta({
      description:
        'Worker processes alive in the pool. 0: nothing is deciding allocations; they are queued (answered 202) and decided when a worker joins.',
    }),
  })
  .meta({ id: 'Readiness' });

export type QuestDetailView = z.output<typeof questDetailViewSchema>;
export type PublicQuestView = z.output<typeof publicQuestViewSchema>;
export type CampaignView = z.output<typeof campaignViewSchema>;
export type CampaignQuestView = z.output<typeof campaignQuestViewSchema>;
export type ErrorResponse = z.output<typeof errorResponseSchema>;
export type ReadinessChecks = z.output<typeof readinessChecksSchema>;
