import { z } from 'zod';
import { type BatchState, batchSummaryView } from './batch.ts';
import { DEFAULT_MESSAGE } from './errors.ts';
import type { RequestOutcome } from './jobs.ts';
import { type Plan, type PlanItem, rejectionAddress } from './plan.ts';

/**
 * Events: what the ledger decided, as rows written in the deciding transaction (a transactional
 * outbox), read by the feed (GET /events) and delivered to webhook endpoints. Pure: the planner
 * turns a ledger plan into the event rows to insert, every type of event; the store inserts them
 * with the plan's rows (packages/db outbox.ts, the one writer of `events`).
 */

export const EVENT_TYPES = [
  'payout.created',
  'allocation.rejected',
  'payout.reversed',
  'batch.completed',
  'quest.budget_exhausted',
  'quest.budget_low',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** The share of total_points under which quest.budget_low fires when the owner set no threshold. */
export const DEFAULT_BUDGET_LOW_SHARE = 0.1;

export interface EventRow {
  id: string;
  ownerId: string;
  type: EventType;
  questId: number | null;
  allocationId: string | null;
  batchId: string | null;
  data: Record<string, unknown>;
  createdAt: Date;
}

/** A quest as the ledger read it under its lock: what its budget events need. */
export interface EventQuest {
  ownerId: string;
  totalPoints: number;
  /** points_remaining before this transaction. */
  pointsRemaining: number;
  budgetLowThreshold: number | null;
}

export const budgetLowThreshold = (q: { totalPoints: number; budgetLowThreshold: number | null }) =>
  q.budgetLowThreshold ?? Math.floor(q.totalPoints * DEFAULT_BUDGET_LOW_SHARE);

const questBudget = (id: number, q: EventQuest, remaining: number) => ({
  quest: {
    id,
    total_points: q.totalPoints,
    points_remaining: remaining,
    budget_low_threshold: budgetLowThreshold(q),
  },
});

type NewEvent = Omit<EventRow, 'id' | 'ownerId' | 'questId' | 'createdAt'>;

/** The event of one item decided now, if it announces one (see planEvents). */
function itemEvent(item: PlanItem, outcome: RequestOutcome): NewEvent | undefined {
  if (outcome.status === 'failed' || outcome.replayed) return undefined;
  if (item.kind === 'reversal') {
    // A reversal announces what it took back; a refused one is answered to its caller (200 or the
    // status URL of its 202) and changes nothing, so no event.
    if (outcome.status !== 'reversed') return undefined;
    return { type: 'payout.reversed', allocationId: null, batchId: null, data: { reversal: outcome.reversal } };
  }
  const common = { allocationId: item.key, batchId: item.batchId ?? null };
  if (outcome.status === 'completed') return { type: 'payout.created', ...common, data: { payout: outcome.payout } };
  if (outcome.status !== 'rejected') return undefined;
  const error = { code: outcome.code, message: DEFAULT_MESSAGE[outcome.code] };
  return {
    type: 'allocation.rejected',
    ...common,
    data: { allocation: { id: item.key, status: 'rejected', address: rejectionAddress(item), points: item.points, error } },
  };
}

/** A quest's budget crossings, from `before` to `after` points remaining: budget_low, then budget_exhausted. */
function budgetEvents(questId: number, quest: EventQuest, after: number): NewEvent[] {
  const before = quest.pointsRemaining;
  const threshold = budgetLowThreshold(quest);
  const common = { allocationId: null, batchId: null, data: questBudget(questId, quest, after) };
  const events: NewEvent[] = [];
  if (before > threshold && after <= threshold && after > 0) events.push({ type: 'quest.budget_low', ...common });
  if (before > 0 && after === 0) events.push({ type: 'quest.budget_exhausted', ...common });
  return events;
}

/**
 * The events of one ledger transaction, in decision order: one per item decided now (a replayed
 * outcome was announced when it was decided), then each quest's budget crossings, then — for a
 * batch chunk, given the batch as the chunk leaves it — batch.completed if the chunk completed it
 * (its `batch` as GET …/batches/{batchId} answers it, without results). `newEventId` must hand out
 * increasing ids (newId('evt') does within a process), so the ids keep this order.
 */
export function planEvents(
  items: readonly PlanItem[],
  plan: Pick<Plan, 'outcomes' | 'pointsRemaining'>,
  quests: ReadonlyMap<number, EventQuest>,
  now: Date,
  newEventId: () => string,
  batch?: BatchState,
): EventRow[] {
  const events: EventRow[] = [];
  const add = (ownerId: string, questId: number, e: NewEvent) =>
    events.push({ id: newEventId(), ownerId, questId, createdAt: now, ...e });
  items.forEach((item, i) => {
    const outcome = plan.outcomes[i];
    const quest = quests.get(item.questId);
    const event = outcome && quest ? itemEvent(item, outcome) : undefined;
    if (event) add(quest!.ownerId, item.questId, event);
  });
  for (const [questId, after] of plan.pointsRemaining) {
    const quest = quests.get(questId);
    if (quest) for (const e of budgetEvents(questId, quest, after)) add(quest.ownerId, questId, e);
  }
  if (batch?.status === 'completed') {
    const data = { batch: batchSummaryView(batch) };
    add(batch.owner_id, batch.quest_id, { type: 'batch.completed', allocationId: null, batchId: batch.id, data });
  }
  return events;
}

/** An event as the feed answers it and as a webhook delivers it (the signed body). */
export const eventViewSchema = z
  .object({
    id: z.string().meta({
      description: 'Event id: `evt_` and a time-sortable ULID. Also the `webhook-id` of its deliveries (receivers dedupe on it).',
      example: 'evt_01jf8q4g0x7m3r6v2k9d1n5btd',
    }),
    type: z.enum(EVENT_TYPES).meta({ description: 'What happened; `data` holds the view of it.' }),
    created_at: z.iso.datetime().meta({ description: 'When the decision committed (ISO 8601 UTC).' }),
    quest_id: z.number().int().nullable().meta({ description: 'The quest concerned.' }),
    allocation_id: z.string().nullable().meta({
      description:
        'The allocation decided (`alc_…` or `<batch id>:<index>`), for allocation events; null for payout.reversed (its `data.reversal.id` is the reversal).',
    }),
    batch_id: z.string().nullable().meta({ description: 'The batch (`bat_…`), for a batch item or batch.completed.' }),
    data: z.record(z.string(), z.unknown()).meta({
      description:
        'payout.created: `{payout}`; allocation.rejected: `{allocation}` (id, status, address, points, error); ' +
        'payout.reversed: `{reversal}` (as the reversal POST answers it); ' +
        'batch.completed: `{batch}` (as GET …/batches/{batchId} without results); quest.budget_low and ' +
        'quest.budget_exhausted: `{quest}` (id, total_points, points_remaining, budget_low_threshold).',
    }),
  })
  .meta({ id: 'Event', description: 'Something the service decided.' });
export type EventView = z.output<typeof eventViewSchema>;

export function eventView(row: {
  id: string;
  type: string;
  createdAt: Date;
  questId: number | null;
  allocationId: string | null;
  batchId: string | null;
  data: unknown;
}): EventView {
  return {
    id: row.id,
    type: row.type as EventType,
    created_at: row.createdAt.toISOString(),
    quest_id: row.questId,
    allocation_id: row.allocationId,
    batch_id: row.batchId,
    data: row.data as Record<string, unknown>,
  };
}
