import type {
  ActionStatus,
  EventQuest,
  PlanAccount,
  PlanItem,
  PlanPayout,
  PlanState,
  QuestLedgerState,
  RejectionCode,
  StoredOutcome,
} from '@quest/domain';
import type { Sql } from './client.ts';
import { BATCH_COLUMNS, type BatchRow } from './lifecycle.ts';

/**
 * The ledger transaction's reads (ledger.ts, step 1), sent together behind BEGIN: one round trip
 * whatever the list length. The quest lock is taken first on the server, so the reads that follow
 * see everything committed by the previous holder of the lock (a payout's reversals and a batch's
 * chunks are all written under its quest's lock).
 */

interface QuestRow {
  id: number;
  start_at: Date;
  end_at: Date;
  action_status: ActionStatus;
  points_remaining: number;
  // read for the quest's events (outbox.ts)
  owner_id: string;
  total_points: number;
  budget_low_threshold: number | null;
}

interface StoredRow {
  quest_id: number;
  request_key: string;
  id: string | null;
  amount: number;
  created_at: Date;
  address: string;
  error_code: RejectionCode | null;
}

interface StoredReversalRow {
  quest_id: number;
  id: string;
  payout_id: string;
  requested_points: number | null;
  reason: string | null;
  amount: number;
  created_at: Date;
  address: string | null;
  error_code: RejectionCode | null;
}

interface AccountRow {
  id: number;
  pass_address: string;
  balance: number;
}

interface PayoutStateRow {
  id: string;
  quest_id: number;
  account_id: number;
  amount: number;
  pass_address: string;
  balance: number;
  reversed: number;
}

/** What a ledger transaction plans from. */
export interface LedgerState {
  /** The planner's input (planRequests). */
  plan: PlanState;
  /** The quests as read under their locks, for their events (planEvents). */
  quests: Map<number, EventQuest>;
  /** The batch a chunk belongs to, as committed before this transaction; undefined if it does not exist. */
  batch: BatchRow | undefined;
}

/**
 * Read what planning `items` needs: the items' quests, locked; the outcomes already stored for
 * `lookUp` (items whose key may have one); the accounts of their addresses; the payouts their
 * reversals name, with what stored reversals already took back; and the batch `batchId`, if given.
 */
export async function readLedgerState(
  tx: Sql,
  items: readonly PlanItem[],
  lookUp: readonly PlanItem[],
  batchId?: string,
): Promise<LedgerState> {
  const questIds = [...new Set(items.map((i) => i.questId))].sort((a, b) => a - b);
  // Accounts are matched case-insensitively (unique index on lower(pass_address)), so callers may
  // pass addresses in any case; answers carry the stored, checksummed form.
  const addresses = [...new Set(items.flatMap((i) => (i.kind === 'reversal' ? [] : [i.address.toLowerCase()])))];
  const payoutIds = [...new Set(items.flatMap((i) => (i.kind === 'reversal' ? [i.payoutId] : [])))];
  const allocations = lookUp.filter((i) => i.kind !== 'reversal');
  const reversalKeys = lookUp.filter((i) => i.kind === 'reversal').map((i) => i.key);
  // Sent in this order (postgres.js sends a query when it is first awaited): the lock first.
  const [quests, stored, storedReversals, accounts, payouts, batch] = await Promise.all([
    lockQuests(tx, questIds),
    allocations.length === 0 ? [] : readStoredAllocations(tx, allocations),
    reversalKeys.length === 0 ? [] : readStoredReversals(tx, reversalKeys),
    addresses.length === 0
      ? []
      : tx<AccountRow[]>`
      select id, pass_address, balance from accounts where lower(pass_address) = any(${addresses}::text[])`,
    payoutIds.length === 0 ? [] : readPayouts(tx, payoutIds),
    batchId === undefined ? [] : tx<BatchRow[]>`select ${tx(BATCH_COLUMNS)} from batches where id = ${batchId}`,
  ]);
  return {
    plan: planState(quests, stored, storedReversals, accounts, payouts),
    quests: new Map(
      quests.map((q): [number, EventQuest] => [
        q.id,
        {
          ownerId: q.owner_id,
          totalPoints: q.total_points,
          pointsRemaining: q.points_remaining,
          budgetLowThreshold: q.budget_low_threshold,
        },
      ]),
    ),
    batch: batch[0],
  };
}

/**
 * FOR NO KEY UPDATE, not FOR UPDATE: it serializes ledger transactions on a quest just the same, but
 * does not block the KEY SHARE lock of inserts that reference the quest (a new batch's row, a 202
 * marker), so the API can accept the quest's next batch while this one is being applied.
 */
const lockQuests = (tx: Sql, questIds: number[]) => tx<QuestRow[]>`
  select id, start_at, end_at, action_status, points_remaining, owner_id, total_points, budget_low_threshold
  from quests where id = any(${questIds}::int[]) order by id for no key update`;

function readStoredAllocations(tx: Sql, items: readonly PlanItem[]) {
  const quests = items.map((i) => i.questId);
  const keys = items.map((i) => i.key);
  return tx<StoredRow[]>`
    select p.quest_id, p.request_key, p.id, p.amount, p.created_at, a.pass_address as address, null as error_code
    from payouts p join accounts a on a.id = p.account_id
    where (p.quest_id, p.request_key) in (select * from unnest(${quests}::int[], ${keys}::text[])) and p.batch_id is null
    union all
    select quest_id, request_key, null, points, created_at, address, error_code from allocation_rejections
    where (quest_id, request_key) in (select * from unnest(${quests}::int[], ${keys}::text[]))`;
}

const readStoredReversals = (tx: Sql, keys: string[]) => tx<StoredReversalRow[]>`
  select r.quest_id, r.id, r.payout_id, r.requested_points, r.reason, r.amount, r.created_at,
         a.pass_address as address, null as error_code
  from reversals r join accounts a on a.id = r.account_id where r.id = any(${keys}::text[])
  union all
  select quest_id, id, payout_id, requested_points, reason, 0, created_at, null, error_code
  from reversal_rejections where id = any(${keys}::text[])`;

// sum() of bigint is numeric, which postgres.js hands over as a string: cast it back to int8.
const readPayouts = (tx: Sql, ids: string[]) => tx<PayoutStateRow[]>`
  select p.id, p.quest_id, p.account_id, p.amount, a.pass_address, a.balance,
         coalesce((select sum(r.amount) from reversals r where r.payout_id = p.id), 0)::int8 as reversed
  from payouts p join accounts a on a.id = p.account_id
  where p.id = any(${ids}::text[])`;

function planState(
  quests: readonly QuestRow[],
  stored: readonly StoredRow[],
  storedReversals: readonly StoredReversalRow[],
  accounts: readonly AccountRow[],
  payouts: readonly PayoutStateRow[],
): PlanState {
  const byAddress = new Map<string, PlanAccount>();
  for (const a of accounts)
    byAddress.set(a.pass_address.toLowerCase(), { id: a.id, passAddress: a.pass_address, balance: a.balance });
  for (const p of payouts) {
    byAddress.set(p.pass_address.toLowerCase(), { id: p.account_id, passAddress: p.pass_address, balance: p.balance });
  }
  return {
    quests: new Map(
      quests.map((q): [number, QuestLedgerState] => [
        q.id,
        { startAt: q.start_at, endAt: q.end_at, actionStatus: q.action_status, pointsRemaining: q.points_remaining },
      ]),
    ),
    accounts: byAddress,
    payouts: new Map(
      payouts.map((p): [string, PlanPayout] => [
        p.id,
        {
          id: p.id,
          questId: p.quest_id,
          accountId: p.account_id,
          passAddress: p.pass_address,
          amount: p.amount,
          reversed: Number(p.reversed),
        },
      ]),
    ),
    stored: [...stored.map(storedAllocation), ...storedReversals.map(storedReversal)],
  };
}

const storedAllocation = (o: StoredRow): StoredOutcome => ({
  questId: o.quest_id,
  key: o.request_key,
  payoutId: o.id,
  amount: o.amount,
  createdAt: o.created_at,
  address: o.address,
  errorCode: o.error_code,
});

const storedReversal = (r: StoredReversalRow): StoredOutcome => ({
  kind: 'reversal',
  questId: r.quest_id,
  key: r.id,
  payoutId: r.payout_id,
  requestedPoints: r.requested_points,
  reason: r.reason,
  amount: r.amount,
  createdAt: r.created_at,
  address: r.address,
  errorCode: r.error_code,
});
