import type { RejectionCode } from './errors.ts';
import { type ActionStatus, isWithinWindow } from './quest.ts';

/** What the decision needs to know of a quest, read under its row lock. */
export interface QuestLedgerState {
  startAt: Date;
  endAt: Date;
  actionStatus: ActionStatus;
  pointsRemaining: number;
}

export interface AllocationRequestItem {
  points: number;
  /** The account's id, or null when no account has the address. */
  accountId: number | null;
}

/** The most points an account can hold: its balance column's CHECK, and JavaScript's exact range. */
export const MAX_ACCOUNT_BALANCE = Number.MAX_SAFE_INTEGER;

export type Decision = { ok: true } | { ok: false; code: RejectionCode };

/**
 * Decide one allocation against a quest at one instant, with `remaining` points left in its budget
 * (the quest's, less what earlier items of the same plan took, plus what they gave back). Checks,
 * in order: window, action type, budget, account (the order of the spec's error table), then the
 * account's balance limit: a credit that would take a balance past MAX_ACCOUNT_BALANCE is a
 * business decision (BALANCE_LIMIT_EXCEEDED), not a failure. A credit decided here advances
 * `balances` (account id → balance), so later items, and later quests of the same plan, see it.
 */
export function decideAllocation(
  quest: Omit<QuestLedgerState, 'pointsRemaining'>,
  remaining: number,
  item: AllocationRequestItem,
  now: Date,
  balances: Map<number, number>,
): Decision {
  if (!isWithinWindow(quest, now)) return { ok: false, code: 'QUEST_NOT_ACTIVE' };
  if (quest.actionStatus !== 'active') return { ok: false, code: 'ACTION_TYPE_INACTIVE' };
  if (item.points > remaining) return { ok: false, code: 'INSUFFICIENT_POINTS' };
  if (item.accountId === null) return { ok: false, code: 'ACCOUNT_NOT_FOUND' };
  const balance = balances.get(item.accountId) ?? 0;
  if (item.points > MAX_ACCOUNT_BALANCE - balance) return { ok: false, code: 'BALANCE_LIMIT_EXCEEDED' };
  balances.set(item.accountId, balance + item.points);
  return { ok: true };
}

/**
 * Decide an ordered list of allocations against one quest, at one instant, in order. Each item is
 * checked against the budget left by the items before it, so an item that would overspend is
 * rejected on its own and a later, smaller one may still succeed (see decideAllocation).
 */
export function decideAllocations(
  quest: QuestLedgerState,
  items: readonly AllocationRequestItem[],
  now: Date,
  balances: Map<number, number> = new Map(),
): { decisions: Decision[]; pointsRemaining: number } {
  let remaining = quest.pointsRemaining;
  const decisions = items.map((item) => {
    const decision = decideAllocation(quest, remaining, item, now, balances);
    if (decision.ok) remaining -= item.points;
    return decision;
  });
  return { decisions, pointsRemaining: remaining };
}
