import { passAddressLowerSchema, payoutSchema } from '@quest/domain';
import { z } from 'zod';
import { EXAMPLE_PAYOUT } from '../openapi/examples.ts';
import { errorView, points, timestamp } from './common.ts';

/** The bodies and views of POST /quests/{questId} and of an allocation's status route. */

// The address is lower-cased, not checksummed (a Keccak-256 per request, ~6 % of the API's CPU on a
// hot quest): the ledger matches accounts case-insensitively, a credit answers with the account's
// stored checksummed form, and a rejection is checksummed where it is decided (rejectionAddress).
export const allocateBody = z
  .strictObject({ points, address: passAddressLowerSchema })
  .meta({ example: { points: 250, address: EXAMPLE_PAYOUT.account.pass } });

export const allocationView = z
  .object({
    id: z.string().meta({
      description: 'Allocation id: the request key (`alc_…`), or `<batch id>:<index>` for a batch item.',
      example: 'alc_01jf8q4g0x7m3r6v2k9d1n5bta',
    }),
    status: z.enum(['pending', 'completed', 'rejected', 'failed']).meta({
      description:
        'pending: accepted, not decided yet; completed: credited (see payout); rejected: refused by a decision (see error); ' +
        'failed: given up, nothing applied, a retry with the same Idempotency-Key is safe (see error).',
    }),
    payout: payoutSchema.optional().meta({ description: 'When completed.' }),
    error: errorView.optional().meta({ description: 'When rejected or failed.' }),
    updated_at: timestamp(
      'When this allocation was last touched: decided, accepted, re-driven or given up (ISO 8601 UTC).',
      '2026-03-01T12:00:00.123Z',
    ),
  })
  .meta({ id: 'Allocation', description: 'An allocation and where it stands.' });
export type AllocationView = z.output<typeof allocationView>;

export const payoutResponse = z
  .object({ payout: payoutSchema })
  .meta({ id: 'PayoutResponse', description: 'A decided allocation: the payout.' });
export const allocationResponse = z.object({ allocation: allocationView }).meta({ id: 'AllocationResponse' });
