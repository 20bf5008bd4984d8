import type { BatchItemResult, BatchRow } from '@quest/db';
import { batchSummaryView, INT32_MAX, passAddressLowerSchema, payoutSchema, toChecksumAddress } from '@quest/domain';
import { z } from 'zod';
import { EXAMPLE_PAYOUT } from '../openapi/examples.ts';
import { count, errorOf, errorView, points, timestamp } from './common.ts';

/** The bodies and views of the batch routes, and how a batch's row becomes its view. */

/** RFC 7240 `Prefer: respond-async` on a batch POST: answer 202 once the batch is queued, without waiting for it. */
export const preferHeader = z.string().max(200).optional().meta({
  example: 'respond-async',
  description:
    "Optional. `respond-async`: answer 202 as soon as the batch is queued (its place in the quest's order is then fixed) instead of waiting up to BATCH_WAIT_MS; the answer carries `Preference-Applied: respond-async`. A client keeping several batches of one quest in flight in order sends each after the previous one was answered.",
});

export const respondAsync = (prefer: string | undefined) =>
  prefer?.split(',').some((p) => p.trim().toLowerCase() === 'respond-async') === true;

const batchItem = z.strictObject({ address: passAddressLowerSchema, points });
export const batchBody = z
  .strictObject({
    allocations: z
      .array(batchItem)
      .min(1)
      .meta({ description: 'Allocations, decided in this order. At most BATCH_MAX_ITEMS (default 10,000).' }),
  })
  .meta({
    example: {
      allocations: [
        { address: EXAMPLE_PAYOUT.account.pass, points: 250 },
        { address: '0xCC9c7d5148a0EDF1514037c47dfA6f9F0513149f', points: 40 },
      ],
    },
  });

const batchResult = z
  .object({
    index: z.number().int().min(0).max(INT32_MAX).meta({ description: "The item's index in the request's `allocations`." }),
    status: z.enum(['completed', 'rejected']),
    payout: payoutSchema.optional().meta({ description: 'When completed.' }),
    address: z.string().optional().meta({
      description: "When rejected: the item's pass address (EIP-55 checksum form).",
      example: '0x52908400098527886E0F7030069857D2E4169EE7',
    }),
    points: points.optional().meta({ description: "When rejected: the item's points.", example: 250 }),
    error: errorView.optional().meta({ description: 'When rejected.' }),
  })
  .meta({ id: 'BatchResult', description: 'The outcome of one batch item.' });

const batchView = z
  .object({
    id: z.string().meta({ description: 'Batch id (`bat_…`).', example: 'bat_01jf8q4g0x7m3r6v2k9d1n5btb' }),
    status: z.enum(['pending', 'processing', 'completed', 'failed']).meta({
      description:
        'pending: accepted, not started; processing: items are being decided; completed: every item decided; ' +
        'failed: stopped (retry with the same Idempotency-Key to resume).',
    }),
    total: count('Items in the batch.'),
    processed: count('Items decided so far.'),
    succeeded: count('Items credited.'),
    failed: count('Items rejected.'),
    created_at: timestamp('When the batch was accepted (ISO 8601 UTC).', '2026-03-01T12:00:00.123Z'),
    updated_at: timestamp(
      'When the batch last made progress or was last (re-)driven (ISO 8601 UTC).',
      '2026-03-01T12:00:01.456Z',
    ),
    completed_at: z.iso
      .datetime()
      .nullable()
      .meta({ description: 'When every item was decided (ISO 8601 UTC); null until then.', example: '2026-03-01T12:00:01.456Z' }),
    results: z.array(batchResult).optional().meta({
      description:
        'Item outcomes in index order: all of them in the answer to POST when completed; a page (limit, offset) in GET.',
    }),
  })
  .meta({ id: 'Batch', description: 'A batch: its progress and, when asked for, its item outcomes.' });
export type BatchView = z.output<typeof batchView>;

export const batchResponse = z.object({ batch: batchView }).meta({ id: 'BatchResponse' });

/** The batch's view without results, as batch.completed carries it too (one builder: @quest/domain). */
export const batchSummary = (row: BatchRow): BatchView => batchSummaryView(row);

export const batchResultView = (r: BatchItemResult) =>
  r.status === 'completed'
    ? { index: r.index, status: r.status, payout: r.payout }
    : {
        index: r.index,
        status: r.status,
        address: toChecksumAddress(r.address) ?? r.address,
        points: r.points,
        error: errorOf(r.code),
      };

/**
 * Batch answers carry up to 10,000 results: serialize them with plain JSON.stringify instead of the
 * type provider's per-field zod encoding (~9 µs per result). Their shape is still the documented
 * one: the tests check every answer against the OpenAPI document.
 */
export const plainJson = () => (data: unknown) => JSON.stringify(data);
