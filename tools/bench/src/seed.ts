import type { Sql } from '@quest/db';
import { createOwner } from '@quest/db/owners';
import { createQuests, DAY, randomAddress } from '@quest/testing/seed';

/**
 * The bench's rows, through the shared seed helpers of @quest/testing: one owner with one API key
 * (made the way `quest-admin owner create` makes it), quests whose budgets no scenario can exhaust.
 * Accounts are `createNumberedAccounts` (testAddress(1…n), stored EIP-55 checksummed as the service
 * stores them, and sent that way).
 */

export interface BenchOwner {
  ownerId: string;
  apiKey: string;
}

export async function seedOwner(sql: Sql): Promise<BenchOwner> {
  const { owner, apiKey } = await createOwner(sql, { name: 'Bench owner', pass: randomAddress() });
  return { ownerId: owner.id, apiKey };
}

/** Budget large enough that no scenario can run a quest dry. */
export const QUEST_BUDGET = 1_000_000_000_000;

/** `count` active quests named after the run that uses them (`label n`), open for a week. */
export function seedQuests(sql: Sql, ownerId: string, count: number, label: string): Promise<number[]> {
  return createQuests(sql, count, {
    ownerId,
    name: label,
    description: 'bench',
    endAt: new Date(Date.now() + 7 * DAY),
    totalPoints: QUEST_BUDGET,
  });
}
