import { type Decision, decideAllocations, type QuestLedgerState } from './allocation.ts';
import type { RejectionCode } from './errors.ts';
import { type AllocationOutcome, payoutView } from './jobs.ts';
import { isIdempotentRequestKey } from './keys.ts';

/**
 * The ledger's planner: the *plan* step of read → plan → write. Given the items of one ledger
 * transaction and the state read under the quests' row locks, it decides every item (replaying
 * stored outcomes instead of deciding twice, copying the outcome of a duplicate key inside the
 * list) and returns the rows to write. Pure: the store reads before and writes after.
 */

export interface PlanItem {
  /** Request key, unique per quest. */
  key: string;
  questId: number;
  points: number;
  /** Pass address, any letter case (matched case-insensitively). */
  address: string;
  batchId?: string;
  itemIndex?: number;
}

export interface PlanAccount {
  id: number;
  /** Stored, EIP-55 form. */
  passAddress: string;
  balance: number;
}

/** A payout (payoutId set) or a rejection (errorCode set) already stored for a request key. */
export interface StoredOutcome {
  questId: number;
  key: string;
  payoutId: string | null;
  amount: number;
  createdAt: Date;
  address: string;
  errorCode: RejectionCode | null;
}

export interface PlanState {
  /** Quests read under their row locks; a missing quest fails its items. */
  quests: ReadonlyMap<number, QuestLedgerState>;
  /** Accounts by lower-cased pass address. */
  accounts: ReadonlyMap<string, PlanAccount>;
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

export interface Plan {
  /** One per item, in item order. */
  outcomes: AllocationOutcome[];
  payouts: PayoutRow[];
  rejections: RejectionRow[];
  /** New points_remaining of each quest whose budget changed. */
  pointsRemaining: Map<number, number>;
  /** Points to add to each account, by account id, in ascending id order (the lock order). */
  credits: [accountId: number, amount: number][];
  /** Items completed / not completed (rejected, failed or replayed as such). */
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

export function planAllocations(items: readonly PlanItem[], state: PlanState, now: Date, newPayoutId: () => string): Plan {
  const nowIso = now.toISOString();
  const lower = items.map((i) => i.address.toLowerCase());
  const storedBySlot = new Map(state.stored.map((o) => [slot(o.questId, o.key), o]));
  const outcomes: (AllocationOutcome | undefined)[] = new Array(items.length);
  // First occurrence of each request key in this list; later duplicates copy its outcome.
  const firstIndex = new Map<string, number>();
  const duplicates: number[] = [];
  const freshByQuest = new Map<number, number[]>();

  items.forEach((item, i) => {
    const s = slot(item.questId, item.key);
    const previous = storedBySlot.get(s);
    if (previous) {
      const sameBody = previous.amount === item.points && previous.address.toLowerCase() === lower[i];
      if (!sameBody) outcomes[i] = { status: 'rejected', code: 'IDEMPOTENCY_KEY_REUSED' };
      else if (previous.errorCode) outcomes[i] = { status: 'rejected', code: previous.errorCode, replayed: true };
      else
        outcomes[i] = {
          status: 'completed',
          replayed: true,
          payout: payoutView({
            id: previous.payoutId!,
            amount: previous.amount,
            createdAt: previous.createdAt,
            pass: previous.address,
          }),
        };
      return;
    }
    if (firstIndex.has(s)) {
      duplicates.push(i);
      return;
    }
    firstIndex.set(s, i);
    if (!state.quests.has(item.questId)) {
      outcomes[i] = { status: 'failed', code: 'ALLOCATION_FAILED' };
      return;
    }
    const list = freshByQuest.get(item.questId);
    if (list) list.push(i);
    else freshByQuest.set(item.questId, [i]);
  });

  const payouts: PayoutRow[] = [];
  const rejections: RejectionRow[] = [];
  const pointsRemaining = new Map<number, number>();
  const credits = new Map<number, number>();
  const balances = new Map<number, number>();
  for (const account of state.accounts.values()) balances.set(account.id, account.balance);

  // Decide each quest's fresh items in list order (the list is already in enqueue order).
  for (const [questId, indexes] of freshByQuest) {
    const quest = state.quests.get(questId)!;
    const { decisions, pointsRemaining: left } = decideAllocations(
      quest,
      indexes.map((i) => ({ points: items[i]!.points, accountId: state.accounts.get(lower[i]!)?.id ?? null })),
      now,
      balances,
    );
    if (left !== quest.pointsRemaining) pointsRemaining.set(questId, left);
    decisions.forEach((decision: Decision, n) => {
      const i = indexes[n]!;
      const item = items[i]!;
      const batchId = item.batchId ?? null;
      const itemIndex = item.itemIndex ?? null;
      if (decision.ok) {
        const account = state.accounts.get(lower[i]!)!;
        const id = newPayoutId();
        payouts.push({ id, questId, accountId: account.id, amount: item.points, key: item.key, batchId, itemIndex });
        credits.set(account.id, (credits.get(account.id) ?? 0) + item.points);
        outcomes[i] = {
          status: 'completed',
          payout: payoutView({ id, amount: item.points, createdAt: nowIso, pass: account.passAddress }),
        };
      } else {
        rejections.push({
          questId,
          key: item.key,
          address: item.address,
          points: item.points,
          code: decision.code,
          batchId,
          itemIndex,
        });
        outcomes[i] = { status: 'rejected', code: decision.code };
      }
    });
  }

  for (const i of duplicates) {
    const item = items[i]!;
    const j = firstIndex.get(slot(item.questId, item.key))!;
    const first = outcomes[j]!;
    outcomes[i] =
      items[j]!.points === item.points && lower[j] === lower[i]
        ? first.status === 'failed'
          ? first
          : { ...first, replayed: true }
        : { status: 'rejected', code: 'IDEMPOTENCY_KEY_REUSED' };
  }

  let succeeded = 0;
  for (const o of outcomes) if (o?.status === 'completed') succeeded++;
  return {
    outcomes: outcomes as AllocationOutcome[],
    payouts,
    rejections,
    pointsRemaining,
    credits: [...credits].sort((a, b) => a[0] - b[0]),
    succeeded,
    failed: items.length - succeeded,
  };
}
