import {
  type ActionStatus,
  type AllocationOutcome,
  type Decision,
  decideAllocations,
  isIdempotentRequestKey,
  newId,
  type RejectionCode,
} from '@quest/domain';
import { pipelinedTransaction, type Sql } from './client.ts';

/**
 * The ledger transaction: decides an ordered list of allocation items and applies the credits,
 * all in one PostgreSQL transaction, with a fixed number of round trips whatever the list length:
 *
 *  1. (pipelined) lock the items' quest rows; read outcomes already stored for their request keys;
 *     read the accounts of their addresses.
 *  2. decide in memory, in order, with the pure `decideAllocations` (window, action type, budget,
 *     account), replaying stored outcomes instead of deciding twice.
 *  3. (pipelined) insert payouts and rejections, set each quest's points_remaining, add to each
 *     account's balance — set-based, through `unnest` arrays.
 *
 * A request key has at most one outcome (payout or rejection; the database enforces it), so a job
 * that is redelivered after its worker died, or a client retrying with the same Idempotency-Key,
 * gets the original outcome and never a second credit.
 */

export interface LedgerItem {
  /** Request key, unique per quest. */
  key: string;
  questId: number;
  points: number;
  /** Pass address, any letter case (matched case-insensitively). */
  address: string;
  batchId?: string;
  itemIndex?: number;
}

export interface ApplyOptions {
  now?: Date;
  /**
   * Which items to look up stored outcomes for before deciding:
   * - 'all' (default): every item — for redelivered jobs and retries, where a previous attempt may
   *   have committed.
   * - 'idempotent': only items whose key came from a client's Idempotency-Key — safe on a job's
   *   first delivery, when a generated key cannot have an outcome yet.
   * - 'none': no item — only for callers that guarantee, in the same transaction, that the items
   *   were never applied (the batch progress guard).
   * Whatever is chosen, the unique (quest_id, request_key) constraint refuses a second credit.
   */
  lookup?: 'all' | 'idempotent' | 'none';
  /**
   * An extra statement run in the same transaction after the writes, e.g. batch progress. It is
   * pipelined with COMMIT: to veto the commit it must fail in SQL (see pipelinedTransaction).
   */
  afterWrites?: (tx: Sql, summary: { succeeded: number; failed: number }) => Promise<unknown>;
}

interface QuestRow {
  id: number;
  start_at: Date;
  end_at: Date;
  action_status: ActionStatus;
  points_remaining: number;
}

/** A payout (error_code null) or a rejection (id null) already stored for a request key. */
interface StoredOutcome {
  quest_id: number;
  request_key: string;
  id: string | null;
  amount: number;
  created_at: Date;
  address: string;
  error_code: RejectionCode | null;
}

const slot = (questId: number, key: string) => `${questId}\u0000${key}`;

export function payoutView(p: {
  id: string;
  amount: number;
  created_at: Date | string;
  pass_address: string;
}): AllocationOutcome {
  const createdAt = typeof p.created_at === 'string' ? p.created_at : p.created_at.toISOString();
  return {
    status: 'completed',
    payout: { id: p.id, amount: p.amount, created_at: createdAt, account: { pass: p.pass_address } },
  };
}

export async function applyAllocations(
  sql: Sql,
  items: readonly LedgerItem[],
  opts: ApplyOptions = {},
): Promise<AllocationOutcome[]> {
  if (items.length === 0) return [];
  const now = opts.now ?? new Date();
  const nowIso = now.toISOString();
  return pipelinedTransaction(sql, async (tx, commit) => {
    const questIds = [...new Set(items.map((i) => i.questId))].sort((a, b) => a - b);
    // Accounts are matched case-insensitively (unique index on lower(pass_address)), so callers may
    // pass addresses in any case; answers carry the stored, checksummed form.
    const lower = items.map((i) => i.address.toLowerCase());
    const addresses = [...new Set(lower)];
    const lookup = opts.lookup ?? 'all';
    const looked = lookup === 'all' ? items : lookup === 'idempotent' ? items.filter((i) => isIdempotentRequestKey(i.key)) : [];
    const keysQ = looked.map((i) => i.questId);
    const keysK = looked.map((i) => i.key);

    // Round trip 1, pipelined behind BEGIN. The quest lock is taken first on the server, so the
    // outcome lookup that follows sees everything committed by the previous holder of the lock.
    const [quests, stored, accounts] = await Promise.all([
      tx<QuestRow[]>`
        select id, start_at, end_at, action_status, points_remaining
        from quests where id = any(${questIds}::int[]) order by id for update`,
      looked.length === 0
        ? ([] as StoredOutcome[])
        : tx<StoredOutcome[]>`
        select p.quest_id, p.request_key, p.id, p.amount, p.created_at, a.pass_address as address, null as error_code
        from payouts p join accounts a on a.id = p.account_id
        where (p.quest_id, p.request_key) in (select * from unnest(${keysQ}::int[], ${keysK}::text[])) and p.batch_id is null
        union all
        select quest_id, request_key, null, points, created_at, address, error_code from allocation_rejections
        where (quest_id, request_key) in (select * from unnest(${keysQ}::int[], ${keysK}::text[]))`,
      tx<{ id: number; pass_address: string }[]>`
        select id, pass_address from accounts where lower(pass_address) = any(${addresses}::text[])`,
    ]);

    const questById = new Map(quests.map((q) => [q.id, q]));
    const accountByAddress = new Map(accounts.map((a) => [a.pass_address.toLowerCase(), a]));
    const storedOutcome = new Map(stored.map((o) => [slot(o.quest_id, o.request_key), o]));

    const outcomes: (AllocationOutcome | undefined)[] = new Array(items.length);
    // First occurrence of each request key in this list; later duplicates copy its outcome.
    const firstIndex = new Map<string, number>();
    const duplicates: number[] = [];
    const freshByQuest = new Map<number, number[]>();

    items.forEach((item, i) => {
      const s = slot(item.questId, item.key);
      const previous = storedOutcome.get(s);
      if (previous) {
        const sameBody = previous.amount === item.points && previous.address.toLowerCase() === lower[i];
        if (!sameBody) outcomes[i] = { status: 'rejected', code: 'IDEMPOTENCY_KEY_REUSED' };
        else if (previous.error_code) outcomes[i] = { status: 'rejected', code: previous.error_code };
        else
          outcomes[i] = payoutView({
            id: previous.id!,
            amount: previous.amount,
            created_at: previous.created_at,
            pass_address: previous.address,
          });
        return;
      }
      if (firstIndex.has(s)) {
        duplicates.push(i);
        return;
      }
      firstIndex.set(s, i);
      if (!questById.has(item.questId)) {
        outcomes[i] = { status: 'failed', code: 'ALLOCATION_FAILED' };
        return;
      }
      const list = freshByQuest.get(item.questId);
      if (list) list.push(i);
      else freshByQuest.set(item.questId, [i]);
    });

    const payoutRows = {
      id: [] as string[],
      questId: [] as number[],
      accountId: [] as number[],
      amount: [] as number[],
      key: [] as string[],
      batchId: [] as (string | null)[],
      itemIndex: [] as (number | null)[],
    };
    const rejectionRows = {
      questId: [] as number[],
      key: [] as string[],
      address: [] as string[],
      points: [] as number[],
      code: [] as string[],
      batchId: [] as (string | null)[],
      itemIndex: [] as (number | null)[],
    };
    const remainingByQuest = new Map<number, number>();
    const creditByAccount = new Map<number, number>();
    let succeeded = 0;
    let failed = 0;

    // Decide each quest's fresh items in list order (the list is already in enqueue order).
    for (const [questId, indexes] of freshByQuest) {
      const quest = questById.get(questId)!;
      const { decisions, pointsRemaining } = decideAllocations(
        {
          startAt: quest.start_at,
          endAt: quest.end_at,
          actionStatus: quest.action_status,
          pointsRemaining: quest.points_remaining,
        },
        indexes.map((i) => ({ points: items[i]!.points, accountId: accountByAddress.get(lower[i]!)?.id ?? null })),
        now,
      );
      if (pointsRemaining !== quest.points_remaining) remainingByQuest.set(questId, pointsRemaining);
      decisions.forEach((decision: Decision, n) => {
        const i = indexes[n]!;
        const item = items[i]!;
        if (decision.ok) {
          const account = accountByAddress.get(lower[i]!)!;
          const accountId = account.id;
          const id = newId('pay', now.getTime());
          payoutRows.id.push(id);
          payoutRows.questId.push(questId);
          payoutRows.accountId.push(accountId);
          payoutRows.amount.push(item.points);
          payoutRows.key.push(item.key);
          payoutRows.batchId.push(item.batchId ?? null);
          payoutRows.itemIndex.push(item.itemIndex ?? null);
          creditByAccount.set(accountId, (creditByAccount.get(accountId) ?? 0) + item.points);
          outcomes[i] = payoutView({ id, amount: item.points, created_at: nowIso, pass_address: account.pass_address });
        } else {
          rejectionRows.questId.push(questId);
          rejectionRows.key.push(item.key);
          rejectionRows.address.push(item.address);
          rejectionRows.points.push(item.points);
          rejectionRows.code.push(decision.code);
          rejectionRows.batchId.push(item.batchId ?? null);
          rejectionRows.itemIndex.push(item.itemIndex ?? null);
          outcomes[i] = { status: 'rejected', code: decision.code };
        }
      });
    }

    for (const i of duplicates) {
      const item = items[i]!;
      const j = firstIndex.get(slot(item.questId, item.key))!;
      outcomes[i] =
        items[j]!.points === item.points && lower[j] === lower[i]
          ? outcomes[j]
          : { status: 'rejected', code: 'IDEMPOTENCY_KEY_REUSED' };
    }

    for (const o of outcomes) {
      if (o?.status === 'completed') succeeded++;
      else failed++;
    }

    // Round trip 2, the writes pipelined with COMMIT. Account credits are applied in id order so two partitions
    // crediting the same accounts lock them in the same order.
    const accountIds = [...creditByAccount.keys()].sort((a, b) => a - b);
    const writes: Promise<unknown>[] = [];
    if (payoutRows.id.length) {
      writes.push(tx`
        insert into payouts (id, quest_id, account_id, amount, request_key, batch_id, item_index, created_at)
        select *, ${now}::timestamptz from unnest(
          ${payoutRows.id}::text[], ${payoutRows.questId}::int[], ${payoutRows.accountId}::bigint[],
          ${payoutRows.amount}::bigint[], ${payoutRows.key}::text[], ${payoutRows.batchId}::text[], ${payoutRows.itemIndex}::int[])`);
      writes.push(tx`
        update accounts a set balance = a.balance + v.amount
        from unnest(${accountIds}::bigint[], ${accountIds.map((id) => creditByAccount.get(id)!)}::bigint[]) as v(id, amount)
        where a.id = v.id`);
    }
    if (rejectionRows.key.length) {
      writes.push(tx`
        insert into allocation_rejections (quest_id, request_key, address, points, error_code, batch_id, item_index, created_at)
        select *, ${now}::timestamptz from unnest(
          ${rejectionRows.questId}::int[], ${rejectionRows.key}::text[], ${rejectionRows.address}::text[],
          ${rejectionRows.points}::bigint[], ${rejectionRows.code}::text[], ${rejectionRows.batchId}::text[], ${rejectionRows.itemIndex}::int[])`);
    }
    if (remainingByQuest.size) {
      const ids = [...remainingByQuest.keys()];
      writes.push(tx`
        update quests q set points_remaining = v.remaining
        from unnest(${ids}::int[], ${ids.map((id) => remainingByQuest.get(id)!)}::bigint[]) as v(id, remaining)
        where q.id = v.id`);
    }
    if (opts.afterWrites) writes.push(opts.afterWrites(tx, { succeeded, failed }));
    await commit(writes);
    return outcomes as AllocationOutcome[];
  });
}
