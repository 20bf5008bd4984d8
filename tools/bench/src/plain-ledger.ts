import type { Sql } from '@quest/db';
import { type ActionStatus, decideAllocation, newId, type RejectionCode } from '@quest/domain';

/**
 * What a user would write instead of this project, for one allocation: one transaction of five
 * statements, each awaited in turn (postgres.js `sql.begin`), no pipelining, no coalescing, no
 * stored rejections, no events, no cache. The checks are the service's (`decideAllocation`: window,
 * action type, budget, account, balance limit), the schema is the service's (so the same indexes
 * and triggers are paid), and the key is checked on every request:
 *
 *  1. the API key with the quest it names, the quest row locked (`for no key update of q`);
 *  2. the account of the address (case-insensitive, the schema's unique index);
 *  3. insert the payout; 4. add to the account's balance; 5. take from the quest's budget.
 *
 * The bench's reference service runs this inline (reference-server.ts), and `ledger-cost.ts` sets
 * it against the worker's ledger transaction. Bench-only; never shipped.
 */

export type PlainOutcome =
  | { status: 'completed'; payout: { id: string; amount: number; created_at: string; account: { pass: string } } }
  | { status: 'rejected'; code: RejectionCode | 'INVALID_API_KEY' | 'NOT_QUEST_OWNER' | 'QUEST_NOT_FOUND' };

interface LockedQuest {
  id: number;
  owner_id: string;
  key_owner: string;
  revoked: boolean;
  start_at: Date;
  end_at: Date;
  action_status: ActionStatus;
  points_remaining: number;
}

export function plainAllocate(
  sql: Sql,
  req: { keyHash: Uint8Array; questId: number; points: number; address: string },
): Promise<PlainOutcome> {
  return sql.begin(async (tx) => {
    const [quest] = await tx<LockedQuest[]>`
      select q.id, q.owner_id, k.owner_id as key_owner, k.revoked_at is not null as revoked,
             q.start_at, q.end_at, q.action_status, q.points_remaining
      from api_keys k join quests q on q.id = ${req.questId}
      where k.key_hash = ${req.keyHash}
      for no key update of q`;
    if (!quest) {
      // Only on the error path: tell an unknown key from an unknown quest.
      const [key] = await tx`select 1 from api_keys where key_hash = ${req.keyHash} and revoked_at is null`;
      return { status: 'rejected', code: key ? 'QUEST_NOT_FOUND' : 'INVALID_API_KEY' };
    }
    if (quest.revoked) return { status: 'rejected', code: 'INVALID_API_KEY' };
    if (quest.owner_id !== quest.key_owner) return { status: 'rejected', code: 'NOT_QUEST_OWNER' };
    const [account] = await tx<{ id: number; pass_address: string; balance: number }[]>`
      select id, pass_address, balance from accounts where lower(pass_address) = ${req.address.toLowerCase()}`;
    const now = new Date();
    const decision = decideAllocation(
      { startAt: quest.start_at, endAt: quest.end_at, actionStatus: quest.action_status },
      quest.points_remaining,
      { points: req.points, accountId: account?.id ?? null },
      now,
      new Map(account ? [[account.id, account.balance]] : []),
    );
    if (!decision.ok || !account) return { status: 'rejected', code: decision.ok ? 'ACCOUNT_NOT_FOUND' : decision.code };
    const id = newId('pay', now.getTime());
    await tx`
      insert into payouts (id, quest_id, account_id, amount, request_key, created_at)
      values (${id}, ${quest.id}, ${account.id}, ${req.points}, ${newId('alc')}, ${now})`;
    await tx`update accounts set balance = balance + ${req.points} where id = ${account.id}`;
    await tx`update quests set points_remaining = points_remaining - ${req.points} where id = ${quest.id}`;
    return {
      status: 'completed',
      payout: { id, amount: req.points, created_at: now.toISOString(), account: { pass: account.pass_address } },
    };
  });
}
