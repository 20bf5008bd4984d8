import { toChecksumAddress } from './address.ts';
import { type AllocationRequestItem, decideAllocation, type QuestLedgerState } from './allocation.ts';
import type { RejectionCode } from './errors.ts';
import { payoutView, type RequestOutcome } from './jobs.ts';
import { isIdempotentRequestKey } from './keys.ts';
import { decideReversal, reversalView } from './reversal.ts';

/**
 * The ledger's planner: the *plan* step of read → plan → write. Given the items of one ledger
 * transaction — allocations and reversals, in the quests' order — and the state read under the
 * quests' row locks, it decides every item strictly in list order (replaying stored outcomes
 * instead of deciding twice, copying the outcome of a duplicate key inside the list) and returns
 * the rows to write. A reversal decided before an allocation gives its points back in time for it.
 * Pure: the store reads before and writes after.
 */

export interface PlanAllocationItem {
  kind?: 'allocation';
  /** Request key, unique per quest. */
  key: string;
  questId: number;
  points: number;
  /** Pass address, any letter case (matched case-insensitively). */
  address: string;
  batchId?: string;
  itemIndex?: number;
}

export interface PlanReversalItem {
  kind: 'reversal';
  /** Request key, and the reversal's id. */
  key: string;
  questId: number;
  payoutId: string;
  /** Absent: the payout's whole unreversed remainder. */
  points?: number | undefined;
  reason?: string | undefined;
}

export type PlanItem = PlanAllocationItem | PlanReversalItem;

export interface PlanAccount {
  id: number;
  /** Stored, EIP-55 form. */
  passAddress: string;
  balance: number;
}

/** A payout a reversal of the list names, with what its stored reversals already took back. */
export interface PlanPayout {
  id: string;
  questId: number;
  accountId: number;
  /** The account's stored, EIP-55 address. */
  passAddress: string;
  amount: number;
  /** Σ amount of its stored reversals. */
  reversed: number;
}

/** A payout (payoutId set) or a rejection (errorCode set) already stored for an allocation's key. */
export interface StoredAllocation {
  kind?: 'allocation';
  questId: number;
  key: string;
  payoutId: string | null;
  amount: number;
  createdAt: Date;
  address: string;
  errorCode: RejectionCode | null;
}

/** A reversal (errorCode null) or a reversal's rejection already stored for a key. */
export interface StoredReversal {
  kind: 'reversal';
  questId: number;
  key: string;
  payoutId: string;
  /** The points asked for; null when the request asked for the remainder. */
  requestedPoints: number | null;
  reason: string | null;
  /** The amount reversed (0 for a rejection). */
  amount: number;
  createdAt: Date;
  /** The account's address (null for a rejection). */
  address: string | null;
  errorCode: RejectionCode | null;
}

export type StoredOutcome = StoredAllocation | StoredReversal;

export interface PlanState {
  /** Quests read under their row locks; a missing quest fails its items. */
  quests: ReadonlyMap<number, QuestLedgerState>;
  /** Accounts by lower-cased pass address (those of the allocations and of the reversed payouts). */
  accounts: ReadonlyMap<string, PlanAccount>;
  /** The payouts named by the list's reversals, by id; a missing one is PAYOUT_NOT_FOUND. */
  payouts?: ReadonlyMap<string, PlanPayout>;
  stored: readonly StoredOutcome[];
}

export interface PayoutRow {
  id: string;
  questId: number;
  accountId: number;
  amount: number;
  key: string;
  batchId: string | null;
  itemIndex: number | null;
}

export interface RejectionRow {
  questId: number;
  key: string;
  address: string;
  points: number;
  code: RejectionCode;
  batchId: string | null;
  itemIndex: number | null;
}

export interface ReversalRow {
  /** The request key. */
  id: string;
  questId: number;
  payoutId: string;
  accountId: number;
  amount: number;
  requestedPoints: number | null;
  reason: string | null;
}

export interface ReversalRejectionRow {
  questId: number;
  key: string;
  payoutId: string;
  requestedPoints: number | null;
  reason: string | null;
  code: RejectionCode;
}

export interface Plan {
  /** One per item, in item order. */
  outcomes: RequestOutcome[];
  payouts: PayoutRow[];
  rejections: RejectionRow[];
  reversals: ReversalRow[];
  reversalRejections: ReversalRejectionRow[];
  /** New points_remaining of each quest whose budget changed. */
  pointsRemaining: Map<number, number>;
  /**
   * Points to add to each account (negative: taken back by reversals), net per account, by account
   * id, in ascending id order (the lock order); accounts whose net change is 0 are left out.
   */
  credits: [accountId: number, amount: number][];
  /** Items completed or reversed / not (rejected, failed or replayed as such). */
  succeeded: number;
  failed: number;
}

const slot = (questId: number, key: string) => `${questId}\u0000${key}`;

/**
 * Which items must have their stored outcomes read before planning. A job's first delivery can
 * only find outcomes for keys a client chose (Idempotency-Key): a generated key has never been
 * applied. Anything else (a redelivered job, a retry after a failed or unknown commit, a conflict
 * on a unique key) reads all of them.
 */
export function itemsToLookUp<T extends PlanItem>(items: readonly T[], firstDelivery: boolean): T[] {
  return firstDelivery ? items.filter((i) => isIdempotentRequestKey(i.key)) : [...items];
}

/** Whether two requests with one key carry the same body (same kind, same fields). */
function sameRequest(a: PlanItem, b: PlanItem): boolean {
  if (a.kind === 'reversal' || b.kind === 'reversal') {
    return (
      a.kind === 'reversal' &&
      b.kind === 'reversal' &&
      a.payoutId === b.payoutId &&
      a.points === b.points &&
      (a.reason ?? null) === (b.reason ?? null)
    );
  }
  return a.points === b.points && a.address.toLowerCase() === b.address.toLowerCase();
}

/** The outcome stored for an item's key, replayed; IDEMPOTENCY_KEY_REUSED when the item's body differs. */
function replay(item: PlanItem, stored: StoredOutcome): RequestOutcome {
  if (stored.kind === 'reversal') {
    const same =
      item.kind === 'reversal' &&
      item.payoutId === stored.payoutId &&
      (item.points ?? null) === stored.requestedPoints &&
      (item.reason ?? null) === stored.reason;
    if (!same) return { status: 'rejected', code: 'IDEMPOTENCY_KEY_REUSED' };
    if (stored.errorCode) return { status: 'rejected', code: stored.errorCode, replayed: true };
    return {
      status: 'reversed',
      replayed: true,
      reversal: reversalView({
        id: stored.key,
        payoutId: stored.payoutId,
        questId: stored.questId,
        amount: stored.amount,
        reason: stored.reason,
        createdAt: stored.createdAt,
        pass: stored.address!,
      }),
    };
  }
  const same =
    item.kind !== 'reversal' && stored.amount === item.points && stored.address.toLowerCase() === item.address.toLowerCase();
  if (!same) return { status: 'rejected', code: 'IDEMPOTENCY_KEY_REUSED' };
  if (stored.errorCode) return { status: 'rejected', code: stored.errorCode, replayed: true };
  return {
    status: 'completed',
    replayed: true,
    payout: payoutView({ id: stored.payoutId!, amount: stored.amount, createdAt: stored.createdAt, pass: stored.address }),
  };
}

/**
 * The address a rejection is stored (and its event sent) with. A single request's arrives in any
 * letter case — the API does not spend a Keccak-256 on every request, since a credit answers with
 * the account's stored checksummed form — so a rejected one is checksummed here, where rejections
 * are rare. A batch item's stays lower-cased: a batch may reject all of its 100,000 items, and its
 * result pages checksum what they show.
 */
export function rejectionAddress(item: { address: string; batchId?: string | null }): string {
  return item.batchId == null ? (toChecksumAddress(item.address) ?? item.address) : item.address;
}

/**
 * Decide a list of allocations and reversals, strictly in list order (the list is already in
 * enqueue order). Each quest's budget is carried from item to item: an allocation spends it, a
 * reversal gives back what it takes from its payout, so a later allocation may use it.
 */
export function planRequests(items: readonly PlanItem[], state: PlanState, now: Date, newPayoutId: () => string): Plan {
  const nowIso = now.toISOString();
  const storedBySlot = new Map(state.stored.map((o) => [slot(o.questId, o.key), o]));
  const outcomes: (RequestOutcome | undefined)[] = new Array(items.length);
  // First occurrence of each request key in this list; later duplicates copy its outcome.
  const firstIndex = new Map<string, number>();
  const duplicates: number[] = [];

  const payouts: PayoutRow[] = [];
  const rejections: RejectionRow[] = [];
  const reversals: ReversalRow[] = [];
  const reversalRejections: ReversalRejectionRow[] = [];
  const remaining = new Map<number, number>();
  const credits = new Map<number, number>();
  const balances = new Map<number, number>();
  for (const account of state.accounts.values()) balances.set(account.id, account.balance);
  // Σ reversed per payout, stored and decided so far in this list.
  const reversed = new Map<string, number>();
  const credit = (accountId: number, amount: number) => credits.set(accountId, (credits.get(accountId) ?? 0) + amount);

  items.forEach((item, i) => {
    const s = slot(item.questId, item.key);
    const previous = storedBySlot.get(s);
    if (previous) {
      outcomes[i] = replay(item, previous);
      return;
    }
    if (firstIndex.has(s)) {
      duplicates.push(i);
      return;
    }
    firstIndex.set(s, i);
    const quest = state.quests.get(item.questId);
    if (!quest) {
      outcomes[i] = { status: 'failed', code: 'ALLOCATION_FAILED' };
      return;
    }
    const { questId } = item;
    const left = remaining.get(questId) ?? quest.pointsRemaining;

    if (item.kind === 'reversal') {
      const requestedPoints = item.points ?? null;
      const reason = item.reason ?? null;
      const payout = state.payouts?.get(item.payoutId);
      const decision =
        !payout || payout.questId !== questId
          ? ({ ok: false, code: 'PAYOUT_NOT_FOUND' } as const)
          : decideReversal({ amount: payout.amount, reversed: reversed.get(payout.id) ?? payout.reversed }, item.points);
      if (!decision.ok) {
        reversalRejections.push({
          questId,
          key: item.key,
          payoutId: item.payoutId,
          requestedPoints,
          reason,
          code: decision.code,
        });
        outcomes[i] = { status: 'rejected', code: decision.code };
        return;
      }
      const { amount } = decision;
      const p = payout!;
      reversed.set(p.id, (reversed.get(p.id) ?? p.reversed) + amount);
      remaining.set(questId, left + amount);
      balances.set(p.accountId, (balances.get(p.accountId) ?? 0) - amount);
      credit(p.accountId, -amount);
      reversals.push({ id: item.key, questId, payoutId: p.id, accountId: p.accountId, amount, requestedPoints, reason });
      outcomes[i] = {
        status: 'reversed',
        reversal: reversalView({
          id: item.key,
          payoutId: p.id,
          questId,
          amount,
          reason,
          createdAt: nowIso,
          pass: p.passAddress,
        }),
      };
      return;
    }

    const account = state.accounts.get(item.address.toLowerCase());
    const request: AllocationRequestItem = { points: item.points, accountId: account?.id ?? null };
    const decision = decideAllocation(quest, left, request, now, balances);
    const batchId = item.batchId ?? null;
    const itemIndex = item.itemIndex ?? null;
    if (!decision.ok) {
      rejections.push({
        questId,
        key: item.key,
        address: rejectionAddress(item),
        points: item.points,
        code: decision.code,
        batchId,
        itemIndex,
      });
      outcomes[i] = { status: 'rejected', code: decision.code };
      return;
    }
    const id = newPayoutId();
    remaining.set(questId, left - item.points);
    credit(account!.id, item.points);
    payouts.push({ id, questId, accountId: account!.id, amount: item.points, key: item.key, batchId, itemIndex });
    outcomes[i] = {
      status: 'completed',
      payout: payoutView({ id, amount: item.points, createdAt: nowIso, pass: account!.passAddress }),
    };
  });

  for (const i of duplicates) {
    const item = items[i]!;
    const j = firstIndex.get(slot(item.questId, item.key))!;
    const first = outcomes[j]!;
    outcomes[i] = sameRequest(items[j]!, item)
      ? first.status === 'failed'
        ? first
        : { ...first, replayed: true }
      : { status: 'rejected', code: 'IDEMPOTENCY_KEY_REUSED' };
  }

  const pointsRemaining = new Map<number, number>();
  for (const [questId, left] of remaining)
    if (left !== state.quests.get(questId)!.pointsRemaining) pointsRemaining.set(questId, left);
  let succeeded = 0;
  for (const o of outcomes) if (o?.status === 'completed' || o?.status === 'reversed') succeeded++;
  return {
    outcomes: outcomes as RequestOutcome[],
    payouts,
    rejections,
    reversals,
    reversalRejections,
    pointsRemaining,
    credits: [...credits].filter(([, amount]) => amount !== 0).sort((a, b) => a[0] - b[0]),
    succeeded,
    failed: items.length - succeeded,
  };
}
