import { passAddressSchema, payoutSchema } from '@quest/domain';
import { z } from 'zod';
import { count, pageQuery } from './common.ts';

/** The query and answer of GET /quests/{questId}/payouts: an account's payouts on a quest. */

export const accountPayoutsQuery = pageQuery.extend({
  address: passAddressSchema.meta({
    description: 'Pass address of the account (any letter case; compared in checksum form).',
    example: '0x52908400098527886E0F7030069857D2E4169EE7',
  }),
});

export const accountPayoutSchema = payoutSchema
  .extend({
    reversed_amount: count('Points taken back from this payout by its reversals, in total (at most its amount).'),
  })
  .meta({ id: 'AccountPayout', description: 'A payout with what its reversals took back.' });

export const accountPayoutsResponse = z
  .object({ payouts: z.array(accountPayoutSchema).meta({ description: 'Oldest first (decision order).' }) })
  .meta({ id: 'AccountPayoutsResponse' });
