import {
  type ActionStatus,
  itemsToLookUp,
  newId,
  type PlanAccount,
  type PlanAllocationItem,
  type PlanItem,
  type PlanPayout,
  planRequests,
  type QuestLedgerState,
  type RejectionCode,
  type RequestOutcome,
  type StoredOutcome,
} from '@quest/domain';
import { pipelinedTransaction, type Sql } from './client.ts';
import { advanceBatch } from './lifecycle.ts';
import { writeLedgerEvents } from './outbox.ts';

/**
 * The ledger transaction: read → plan → write, in one PostgreSQL transaction, with a fixed number
 * of round trips whatever the list length:
 *
 *  1. read (pipelined behind BEGIN): lock the items' quest rows; read outcomes already stored for
 *     the request keys that may have one; read the accounts of their addresses, and the payouts
 *     the reversals name with what their stored reversals already took back.
 *  2. plan, in memory, with the pure `planRequests`: allocations and reversals strictly in list
 *     order (window, action type, budget, account, balance limit; a reversal's remainder; replays
 *     of stored outcomes; duplicates inside the list).
 *  3. write (pipelined with COMMIT): payouts, reversals and their rejections, each quest's
 *     points_remaining (up by what reversals gave back, also after the quest's window ended), each
 *     account's balance (net of credits and reversals), and the decisions' events (outbox.ts) —
 *     set-based, through `unnest` arrays.
 *
 * A request key has at most one outcome (payout, reversal or rejection; the database enforces it), so a job
 * that is redelivered after its worker died, or a client retrying with the same Idempotency-Key,
 * gets the original outcome and never a second credit.
 *
 * Two entry points say what they apply: `applyRequests` (single requests, coalesced or not) and
 * `applyBatchChunk` (a slice of a batch, guarded by the batch's progress).
 */

/** An allocation, as a batch chunk carries it. */
export type LedgerItem = PlanAllocationItem;
/** An allocation or a reversal, as single requests carry them. */
export type LedgerRequest = PlanItem;

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

interface PayoutStateRow {
  id: string;
  quest_id: number;
  account_id: number;
  amount: number;
  pass_address: string;
  balance: number;
  reversed: number;
}

/**
 * Apply single requests — allocations and reversals, one POST or several coalesced into one job —
 * in list order. On a job's
 * first delivery, stored outcomes are read only for client-chosen keys (`itemsToLookUp`); any
 * other attempt (`firstDelivery: false`) reads them for every item, so whatever an earlier attempt
 * committed is replayed, never applied twice.
 */
export function applyRequests(
  sql: Sql,
  items: readonly LedgerRequest[],
  opts: { firstDelivery: boolean; now?: Date; signal?: AbortSignal },
): Promise<RequestOutcome[]> {
  return runLedger(sql, items, itemsToLookUp(items, opts.firstDelivery), opts.now ?? new Date(), undefined, opts.signal);
}

/**
 * Apply items [start, start + items.length) of a batch, and advance the batch's progress in the same
 * transaction (lifecycle.ts `advanceBatch`), only from where the chunk started. If another copy of
 * the job got there first, the transaction rolls back and this throws BatchProgressMoved: a chunk is
 * never applied twice, so no stored outcome needs reading.
 */
export function applyBatchChunk(
  sql: Sql,
  chunk: { batchId: string; start: number; items: readonly LedgerItem[]; now?: Date; signal?: AbortSignal },
): Promise<RequestOutcome[]> {
  const { batchId, start, items } = chunk;
  return runLedger(
    sql,
    items,
    [],
    chunk.now ?? new Date(),
    (tx, plan) => advanceBatch(tx, { batchId, start, count: items.length, succeeded: plan.succeeded, failed: plan.failed }),
    chunk.signal,
  );
}

async function runLedger(
  sql: Sql,
  items: readonly LedgerRequest[],
  lookUp: readonly LedgerRequest[],
  now: Date,
  afterWrites?: (tx: Sql, plan: { succeeded: number; failed: number }) => Promise<unknown>,
  /**
   * The job's: once its worker abandoned it, the plan is not written. Its first-delivery plan may
   * skip stored outcomes (`itemsToLookUp`), which is sound only while no other attempt of the job
   * can have decided them — and the next owner may once the job is abandoned.
   */
  signal?: AbortSignal,
): Promise<RequestOutcome[]> {
  if (items.length === 0) return [];
  return pipelinedTransaction(
    sql,
    async (tx, commit) => {
      const questIds = [...new Set(items.map((i) => i.questId))].sort((a, b) => a - b);
      // Accounts are matched case-insensitively (unique index on lower(pass_address)), so callers may
      // pass addresses in any case; answers carry the stored, checksummed form.
      const addresses = [...new Set(items.flatMap((i) => (i.kind === 'reversal' ? [] : [i.address.toLowerCase()])))];
      const payoutIds = [...new Set(items.flatMap((i) => (i.kind === 'reversal' ? [i.payoutId] : [])))];
      const allocationLookUp = lookUp.filter((i) => i.kind !== 'reversal');
      const reversalKeys = lookUp.filter((i) => i.kind === 'reversal').map((i) => i.key);
      const keysQ = allocationLookUp.map((i) => i.questId);
      const keysK = allocationLookUp.map((i) => i.key);

      // Read, pipelined behind BEGIN. The quest lock is taken first on the server, so the reads that
      // follow see everything committed by the previous holder of the lock (a payout's reversals are
      // all written under its quest's lock). FOR NO KEY UPDATE, not FOR UPDATE: it serializes ledger
      // transactions on a quest just the same, but does not block the KEY SHARE lock of inserts that
      // reference the quest (a new batch's row, a 202 marker), so the API can accept the quest's next
      // batch while this one is being applied.
      const [quests, stored, storedReversals, accounts, payouts] = await Promise.all([
        tx<QuestRow[]>`
        select id, start_at, end_at, action_status, points_remaining, owner_id, total_points, budget_low_threshold
        from quests where id = any(${questIds}::int[]) order by id for no key update`,
        allocationLookUp.length === 0
          ? ([] as StoredRow[])
          : tx<StoredRow[]>`
        select p.quest_id, p.request_key, p.id, p.amount, p.created_at, a.pass_address as address, null as error_code
        from payouts p join accounts a on a.id = p.account_id
        where (p.quest_id, p.request_key) in (select * from unnest(${keysQ}::int[], ${keysK}::text[])) and p.batch_id is null
        union all
        select quest_id, request_key, null, points, created_at, address, error_code from allocation_rejections
        where (quest_id, request_key) in (select * from unnest(${keysQ}::int[], ${keysK}::text[]))`,
        reversalKeys.length === 0
          ? ([] as StoredReversalRow[])
          : tx<StoredReversalRow[]>`
        select r.quest_id, r.id, r.payout_id, r.requested_points, r.reason, r.amount, r.created_at,
               a.pass_address as address, null as error_code
        from reversals r join accounts a on a.id = r.account_id where r.id = any(${reversalKeys}::text[])
        union all
        select quest_id, id, payout_id, requested_points, reason, 0, created_at, null, error_code
        from reversal_rejections where id = any(${reversalKeys}::text[])`,
        addresses.length === 0
          ? ([] as { id: number; pass_address: string; balance: number }[])
          : tx<{ id: number; pass_address: string; balance: number }[]>`
        select id, pass_address, balance from accounts where lower(pass_address) = any(${addresses}::text[])`,
        // sum() of bigint is numeric, which postgres.js hands over as a string: cast it back to int8.
        payoutIds.length === 0
          ? ([] as PayoutStateRow[])
          : tx<PayoutStateRow[]>`
        select p.id, p.quest_id, p.account_id, p.amount, a.pass_address, a.balance,
               coalesce((select sum(r.amount) from reversals r where r.payout_id = p.id), 0)::int8 as reversed
        from payouts p join accounts a on a.id = p.account_id
        where p.id = any(${payoutIds}::text[])`,
      ]);

      const accountsByAddress = new Map(
        accounts.map((a): [string, PlanAccount] => [
          a.pass_address.toLowerCase(),
          { id: a.id, passAddress: a.pass_address, balance: a.balance },
        ]),
      );
      for (const p of payouts) {
        accountsByAddress.set(p.pass_address.toLowerCase(), {
          id: p.account_id,
          passAddress: p.pass_address,
          balance: p.balance,
        });
      }
      const plan = planRequests(
        items,
        {
          quests: new Map(
            quests.map((q): [number, QuestLedgerState] => [
              q.id,
              { startAt: q.start_at, endAt: q.end_at, actionStatus: q.action_status, pointsRemaining: q.points_remaining },
            ]),
          ),
          accounts: accountsByAddress,
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
          stored: [
            ...stored.map(
              (o): StoredOutcome => ({
                questId: o.quest_id,
                key: o.request_key,
                payoutId: o.id,
                amount: o.amount,
                createdAt: o.created_at,
                address: o.address,
                errorCode: o.error_code,
              }),
            ),
            ...storedReversals.map(
              (r): StoredOutcome => ({
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
              }),
            ),
          ],
        },
        now,
        () => newId('pay', now.getTime()),
      );

      // Write, pipelined with COMMIT. Balance changes come in account id order, so two partitions
      // crediting (or reversing on) the same accounts lock them in the same order.
      const writes: Promise<unknown>[] = [];
      const { payouts: paid, rejections, reversals, reversalRejections, credits } = plan;
      if (paid.length) {
        writes.push(tx`
        insert into payouts (id, quest_id, account_id, amount, request_key, batch_id, item_index, created_at)
        select *, ${now}::timestamptz from unnest(
          ${paid.map((r) => r.id)}::text[], ${paid.map((r) => r.questId)}::int[], ${paid.map((r) => r.accountId)}::bigint[],
          ${paid.map((r) => r.amount)}::bigint[], ${paid.map((r) => r.key)}::text[], ${paid.map((r) => r.batchId)}::text[],
          ${paid.map((r) => r.itemIndex)}::int[])`);
      }
      if (reversals.length) {
        writes.push(tx`
        insert into reversals (id, quest_id, payout_id, account_id, amount, requested_points, reason, created_at)
        select *, ${now}::timestamptz from unnest(
          ${reversals.map((r) => r.id)}::text[], ${reversals.map((r) => r.questId)}::int[], ${reversals.map((r) => r.payoutId)}::text[],
          ${reversals.map((r) => r.accountId)}::bigint[], ${reversals.map((r) => r.amount)}::bigint[],
          ${reversals.map((r) => r.requestedPoints)}::bigint[], ${reversals.map((r) => r.reason)}::text[])`);
      }
      if (reversalRejections.length) {
        const rr = reversalRejections;
        writes.push(tx`
        insert into reversal_rejections (id, quest_id, payout_id, requested_points, reason, error_code, created_at)
        select *, ${now}::timestamptz from unnest(
          ${rr.map((r) => r.key)}::text[], ${rr.map((r) => r.questId)}::int[], ${rr.map((r) => r.payoutId)}::text[],
          ${rr.map((r) => r.requestedPoints)}::bigint[], ${rr.map((r) => r.reason)}::text[], ${rr.map((r) => r.code)}::text[])`);
      }
      if (credits.length) {
        writes.push(tx`
        update accounts a set balance = a.balance + v.amount
        from unnest(${credits.map((c) => c[0])}::bigint[], ${credits.map((c) => c[1])}::bigint[]) as v(id, amount)
        where a.id = v.id`);
      }
      if (rejections.length) {
        writes.push(tx`
        insert into allocation_rejections (quest_id, request_key, address, points, error_code, batch_id, item_index, created_at)
        select *, ${now}::timestamptz from unnest(
          ${rejections.map((r) => r.questId)}::int[], ${rejections.map((r) => r.key)}::text[], ${rejections.map((r) => r.address)}::text[],
          ${rejections.map((r) => r.points)}::bigint[], ${rejections.map((r) => r.code)}::text[], ${rejections.map((r) => r.batchId)}::text[],
          ${rejections.map((r) => r.itemIndex)}::int[])`);
      }
      if (plan.pointsRemaining.size) {
        const ids = [...plan.pointsRemaining.keys()];
        writes.push(tx`
        update quests q set points_remaining = v.remaining
        from unnest(${ids}::int[], ${ids.map((id) => plan.pointsRemaining.get(id)!)}::bigint[]) as v(id, remaining)
        where q.id = v.id`);
      }
      // The decisions' events, in the same transaction (a transactional outbox: see outbox.ts).
      const eventQuests = new Map(
        quests.map((q) => [
          q.id,
          {
            ownerId: q.owner_id,
            totalPoints: q.total_points,
            pointsRemaining: q.points_remaining,
            budgetLowThreshold: q.budget_low_threshold,
          },
        ]),
      );
      const events = writeLedgerEvents(tx, items, plan, eventQuests, now);
      if (events) writes.push(events);
      if (afterWrites) writes.push(afterWrites(tx, plan));
      await commit(writes);
      return plan.outcomes;
    },
    signal,
  );
}
