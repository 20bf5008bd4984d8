import { toChecksumAddress } from './address.ts';
import type { QuestLedgerState } from './allocation.ts';
import type { RejectionCode } from './errors.ts';
import type { RequestOutcome } from './jobs.ts';
import { isIdempotentRequestKey } from './keys.ts';

/**
 * The ledger's planner: the *plan* step of read → plan → write. Given the items of one ledger
 * transaction — allocations and reversals, in the quests' order — and the state read under the
 * quests' row locks, it decides every item strictly in list order (replaying stored outcomes
 * instead of deciding twice, copying the outcome of a duplicate key inside the list) and returns
 * the rows to write. A reversal decided before an allocation gives its points back in time for it.
 * Pure: the store reads before and writes after. The deciding is planner.ts's.
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

/** A request's place in the quests' key space: its quest and its key. */
export const slot = (questId: number, key: string) => `${questId}\u0000${key}`;

/**
 * Which items must have their stored outcomes read before planning. A job's first delivery can
 * only find outcomes for keys a client chose (Idempotency-Key): a generated key has never been
 * applied. Anything else (a redelivered job, a retry after a failed or unknown commit, a conflict
 * on a unique key) reads all of them.
 */
export function itemsToLookUp<T extends PlanItem>(items: readonly T[], firstDelivery: boolean): T[] {
  return firstDelivery ? items.filter((i) => isIdempotentRequestKey(i.key)) : [...items];
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
