import { type AllocationRequestItem, decideAllocation } from './allocation.ts';
import { payoutView, type RequestOutcome } from './jobs.ts';
import {
  type Plan,
  type PlanItem,
  type PlanReversalItem,
  type PlanState,
  type PayoutRow,
  type RejectionRow,
  type ReversalRejectionRow,
  type ReversalRow,
  rejectionAddress,
  slot,
  type StoredOutcome,
} from './plan.ts';
import { decideReversal, reversalView } from './reversal.ts';

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

type PlanAllocation = Exclude<PlanItem, PlanReversalItem>;

/**
 * One list's decisions in the making: every quest's budget and every account's balance as the
 * items before have left them, the rows to write, and each item's outcome.
 */
class Planner {
  readonly outcomes: (RequestOutcome | undefined)[];
  /** First occurrence of each request key in this list; later duplicates copy its outcome. */
  readonly firstIndex = new Map<string, number>();
  readonly duplicates: number[] = [];
  readonly payouts: PayoutRow[] = [];
  readonly rejections: RejectionRow[] = [];
  readonly reversals: ReversalRow[] = [];
  readonly reversalRejections: ReversalRejectionRow[] = [];
  readonly remaining = new Map<number, number>();
  readonly credits = new Map<number, number>();
  readonly balances = new Map<number, number>();
  /** Σ reversed per payout, stored and decided so far in this list. */
  readonly reversed = new Map<string, number>();
  readonly storedBySlot: Map<string, StoredOutcome>;
  readonly nowIso: string;

  constructor(
    readonly items: readonly PlanItem[],
    readonly state: PlanState,
    readonly now: Date,
    readonly newPayoutId: () => string,
  ) {
    this.nowIso = now.toISOString();
    this.outcomes = new Array(items.length);
    this.storedBySlot = new Map(state.stored.map((o) => [slot(o.questId, o.key), o]));
    for (const account of state.accounts.values()) this.balances.set(account.id, account.balance);
  }

  /** Item i: replayed, deferred as a duplicate, failed for a quest not read, or decided. */
  decide(item: PlanItem, i: number): void {
    const s = slot(item.questId, item.key);
    const previous = this.storedBySlot.get(s);
    if (previous) {
      this.outcomes[i] = replay(item, previous);
      return;
    }
    if (this.firstIndex.has(s)) {
      this.duplicates.push(i);
      return;
    }
    this.firstIndex.set(s, i);
    const quest = this.state.quests.get(item.questId);
    if (!quest) {
      this.outcomes[i] = { status: 'failed', code: 'ALLOCATION_FAILED' };
      return;
    }
    const left = this.remaining.get(item.questId) ?? quest.pointsRemaining;
    this.outcomes[i] = item.kind === 'reversal' ? this.reverse(item, left) : this.allocate(item, left);
  }

  private credit(accountId: number, amount: number): void {
    this.credits.set(accountId, (this.credits.get(accountId) ?? 0) + amount);
  }

  /** A reversal: its payout's unreversed remainder back to the quest, taken from the account. */
  private reverse(item: PlanReversalItem, left: number): RequestOutcome {
    const { questId } = item;
    const requestedPoints = item.points ?? null;
    const reason = item.reason ?? null;
    const payout = this.state.payouts?.get(item.payoutId);
    const decision =
      !payout || payout.questId !== questId
        ? ({ ok: false, code: 'PAYOUT_NOT_FOUND' } as const)
        : decideReversal({ amount: payout.amount, reversed: this.reversed.get(payout.id) ?? payout.reversed }, item.points);
    if (!decision.ok) {
      this.reversalRejections.push({
        questId,
        key: item.key,
        payoutId: item.payoutId,
        requestedPoints,
        reason,
        code: decision.code,
      });
      return { status: 'rejected', code: decision.code };
    }
    const { amount } = decision;
    const p = payout!;
    this.reversed.set(p.id, (this.reversed.get(p.id) ?? p.reversed) + amount);
    this.remaining.set(questId, left + amount);
    this.balances.set(p.accountId, (this.balances.get(p.accountId) ?? 0) - amount);
    this.credit(p.accountId, -amount);
    this.reversals.push({ id: item.key, questId, payoutId: p.id, accountId: p.accountId, amount, requestedPoints, reason });
    const view = { id: item.key, payoutId: p.id, questId, amount, reason, createdAt: this.nowIso, pass: p.passAddress };
    return { status: 'reversed', reversal: reversalView(view) };
  }

  /** An allocation: the quest's rules and budget, the account's existence and balance limit. */
  private allocate(item: PlanAllocation, left: number): RequestOutcome {
    const { questId } = item;
    const quest = this.state.quests.get(questId)!;
    const account = this.state.accounts.get(item.address.toLowerCase());
    const request: AllocationRequestItem = { points: item.points, accountId: account?.id ?? null };
    const decision = decideAllocation(quest, left, request, this.now, this.balances);
    const batchId = item.batchId ?? null;
    const itemIndex = item.itemIndex ?? null;
    if (!decision.ok) {
      const address = rejectionAddress(item);
      this.rejections.push({ questId, key: item.key, address, points: item.points, code: decision.code, batchId, itemIndex });
      return { status: 'rejected', code: decision.code };
    }
    const id = this.newPayoutId();
    this.remaining.set(questId, left - item.points);
    this.credit(account!.id, item.points);
    this.payouts.push({ id, questId, accountId: account!.id, amount: item.points, key: item.key, batchId, itemIndex });
    return {
      status: 'completed',
      payout: payoutView({ id, amount: item.points, createdAt: this.nowIso, pass: account!.passAddress }),
    };
  }

  /** A duplicate key in the list copies its first occurrence's outcome (replayed), or is a reused key. */
  settleDuplicates(): void {
    for (const i of this.duplicates) {
      const item = this.items[i]!;
      const j = this.firstIndex.get(slot(item.questId, item.key))!;
      const first = this.outcomes[j]!;
      this.outcomes[i] = sameRequest(this.items[j]!, item)
        ? first.status === 'failed'
          ? first
          : { ...first, replayed: true }
        : { status: 'rejected', code: 'IDEMPOTENCY_KEY_REUSED' };
    }
  }

  plan(): Plan {
    const pointsRemaining = new Map<number, number>();
    for (const [questId, left] of this.remaining)
      if (left !== this.state.quests.get(questId)!.pointsRemaining) pointsRemaining.set(questId, left);
    let succeeded = 0;
    for (const o of this.outcomes) if (o?.status === 'completed' || o?.status === 'reversed') succeeded++;
    return {
      outcomes: this.outcomes as RequestOutcome[],
      payouts: this.payouts,
      rejections: this.rejections,
      reversals: this.reversals,
      reversalRejections: this.reversalRejections,
      pointsRemaining,
      credits: [...this.credits].filter(([, amount]) => amount !== 0).sort((a, b) => a[0] - b[0]),
      succeeded,
      failed: this.items.length - succeeded,
    };
  }
}

/**
 * Decide a list of allocations and reversals, strictly in list order (the list is already in
 * enqueue order). Each quest's budget is carried from item to item: an allocation spends it, a
 * reversal gives back what it takes from its payout, so a later allocation may use it.
 */
export function planRequests(items: readonly PlanItem[], state: PlanState, now: Date, newPayoutId: () => string): Plan {
  const planner = new Planner(items, state, now, newPayoutId);
  for (let i = 0; i < items.length; i++) planner.decide(items[i]!, i);
  planner.settleDuplicates();
  return planner.plan();
}
