import {
  type BatchState,
  type EventQuest,
  type EventRow,
  type EventType,
  idTimeBound,
  newId,
  type Plan,
  type PlanItem,
  planEvents,
} from '@quest/domain';
import { keyedSettings, keyedStatement, pipelinedTransaction, type Sql } from './client.ts';
import { fanOutDeliveries, purgeDeliveries } from './deliveries.ts';

/**
 * The events outbox (docs/events.md): events written in the transaction that decides them,
 * numbered after commit by one publisher at a time, read by the feed and fanned out to webhook
 * endpoints. Cost on the ledger's hot path: one multi-row insert per ledger transaction (at most
 * one row per item, plus a quest's budget crossings), pipelined with its COMMIT; no delivery
 * work happens there.
 */

/** Insert events in one statement (unnest arrays), as part of the caller's transaction. */
export function insertEvents(tx: Sql, events: readonly EventRow[]): Promise<unknown> | undefined {
  if (events.length === 0) return undefined;
  return tx`
    insert into events (id, owner_id, type, quest_id, allocation_id, batch_id, data, created_at)
    select id, owner_id, type, quest_id, allocation_id, batch_id, data::jsonb, created_at from unnest(
      ${events.map((e) => e.id)}::text[], ${events.map((e) => e.ownerId)}::text[], ${events.map((e) => e.type)}::text[],
      ${events.map((e) => e.questId)}::int[], ${events.map((e) => e.allocationId)}::text[], ${events.map((e) => e.batchId)}::text[],
      ${events.map((e) => JSON.stringify(e.data))}::text[], ${events.map((e) => e.createdAt.toISOString())}::timestamptz[])
      as v(id, owner_id, type, quest_id, allocation_id, batch_id, data, created_at)`;
}

/**
 * The ledger's events: plan them from the transaction's plan (and, for a batch chunk, the batch as
 * the chunk leaves it), and insert them (see planEvents).
 */
export function writeLedgerEvents(
  tx: Sql,
  items: readonly PlanItem[],
  plan: Pick<Plan, 'outcomes' | 'pointsRemaining'>,
  quests: ReadonlyMap<number, EventQuest>,
  now: Date,
  batch?: BatchState,
): Promise<unknown> | undefined {
  return insertEvents(
    tx,
    planEvents(items, plan, quests, now, () => newId('evt', now.getTime()), batch),
  );
}

/** Arbitrary constant: the advisory lock that makes one publisher transaction run at a time. */
const PUBLISHER_LOCK_ID = 7_351_042_008;

export interface PublishResult {
  /** false: nothing was waiting to be published, and no transaction was opened. */
  ran: boolean;
  published: number;
  deliveries: number;
}

/**
 * Number the next committed, unnumbered events (in id order, up to `limit`) after the last
 * position, and create a pending delivery for each subscribed endpoint (deliveries.ts
 * `fanOutDeliveries`) — one transaction. One publisher at a time (a transaction-scoped advisory
 * lock; any process may call this), so positions follow commit order: an event committed after a
 * reader saw position p gets a position above p.
 *
 * Every worker's pump calls this several times a second, so doing nothing costs one round trip: a
 * probe of the unpublished-events index, under keyedSettings (an index probe whatever the table's
 * statistics say; outbox-probe.test.ts). Otherwise one round trip too: BEGIN, the lock, the
 * numbering and COMMIT go out together (pipelined). The lock waits for another publisher's commit
 * rather than giving up, and the numbering is a statement of its own after it, so its snapshot
 * (read committed: one per statement) sees the positions that publisher gave.
 *
 * The numbering runs under keyedSettings too: planned for its own parameters each time (never a
 * generic plan costed on the table as it once was), by plain index scans only, which mark the
 * unpublished index's entries of events published since the last vacuum dead once instead of
 * re-reading them on every step. docs/performance.md has the measurements behind both rules.
 */
export async function publishEvents(sql: Sql, limit: number): Promise<PublishResult> {
  const [probe] = await keyedStatement(
    sql,
    (tx) => tx<{ waiting: boolean }[]>`select exists (select 1 from events where position is null) as waiting`,
  );
  if (!probe?.waiting) return { ran: false, published: 0, deliveries: 0 };
  return pipelinedTransaction(sql, async (tx, commit) => {
    const lock = tx`select pg_advisory_xact_lock(${PUBLISHER_LOCK_ID})`;
    const plan = keyedSettings(tx);
    const numbered = tx<{ published: number; deliveries: number }[]>`
      with page as (
        select id from events where position is null order by id limit ${limit}
      ), base as (
        select coalesce(max(position), 0) as b from events
      ), numbered as materialized (
        select page.id, base.b + row_number() over (order by page.id) as pos from page, base
      ), moved as (
        update events e set position = n.pos, published_at = now() from numbered n where e.id = n.id
        returning e.id, e.owner_id, e.type
      ), fanned as (${fanOutDeliveries(tx, 'moved')})
      select (select count(*) from moved)::int as published, (select count(*) from fanned)::int as deliveries`;
    await commit([lock, plan, numbered]);
    const [row] = await numbered;
    return { ran: true, published: row?.published ?? 0, deliveries: row?.deliveries ?? 0 };
  });
}

export interface StoredEvent {
  id: string;
  type: EventType;
  createdAt: Date;
  questId: number | null;
  allocationId: string | null;
  batchId: string | null;
  data: unknown;
  position: number;
}

const EVENT_FIELDS = `id, type, created_at as "createdAt", quest_id as "questId", allocation_id as "allocationId",
  batch_id as "batchId", data, position`;

/** The feed position of an owner's published event, or undefined (unknown, another owner's, or purged). */
export async function eventPosition(sql: Sql, ownerId: string, eventId: string): Promise<number | undefined> {
  // By primary key alone, the owner compared here: given `owner_id` too, PostgreSQL may pick the
  // (owner_id, position) index on stale statistics and read every event of the owner.
  const [row] = await sql<{ position: number | null; ownerId: string }[]>`
    select position, owner_id as "ownerId" from events where id = ${eventId}`;
  return row && row.ownerId === ownerId && row.position !== null ? row.position : undefined;
}

/** An owner's published events after a position, in feed order. */
export function listEvents(
  sql: Sql,
  q: { ownerId: string; after: number; limit: number; types?: readonly string[] | undefined },
): Promise<StoredEvent[]> {
  const types = q.types?.length ? (q.types as string[]) : null;
  return sql<StoredEvent[]>`
    select ${sql.unsafe(EVENT_FIELDS)} from events
    where owner_id = ${q.ownerId} and position is not null and position > ${q.after}
      and (${types}::text[] is null or type = any(${types}::text[]))
    order by position limit ${q.limit}`;
}

/** What one purge step deleted. */
export interface Purged {
  events: number;
  deliveries: number;
}

/**
 * Delete up to `limit` events created before `before`, and up to `limit` deliveries of events
 * created before it. Ids are time-sortable, so the primary key finds the old events, and a
 * delivery's event id tells its event's age: a delivery names its event without a foreign key
 * (migration 00012), and the range catches every delivery of a purged event — also one a replay
 * wrote while the purge ran, or one whose event was deleted by other means — on this step or a
 * later one. Call again while either count is `limit`.
 */
export async function purgeEvents(sql: Sql, before: Date, limit: number): Promise<Purged> {
  const bound = idTimeBound('evt', before.getTime());
  const [row] = await sql<Purged[]>`
    with gone_events as (
      delete from events where id in (
        select id from events where id < ${bound} and position is not null order by id limit ${limit})
      returning 1
    ), gone_deliveries as (${purgeDeliveries(sql, bound, limit)})
    select (select count(*) from gone_events)::int as events, (select count(*) from gone_deliveries)::int as deliveries`;
  return row ?? { events: 0, deliveries: 0 };
}

/** Events committed and not yet numbered by the publisher (a gauge: the publisher's backlog). */
export async function unpublishedEvents(sql: Sql): Promise<number> {
  const [row] = await sql<{ n: number }[]>`select count(*)::int as n from events where position is null`;
  return row?.n ?? 0;
}
