import { keyedStatement, type Sql } from './client.ts';
import { updateEndpointHealth } from './endpoints.ts';

/**
 * Webhook deliveries (docs/events.md): the one writer of `webhook_deliveries`. A delivery row is
 * one event for one endpoint: its retry schedule (next_attempt_at) and its log (the last attempt's
 * status code, latency, first KiB of the answer). The schedule is here, not in Redis: the
 * dispatcher hands due deliveries to the queue (enqueued_at), an attempt writes its outcome back,
 * and a delivery the queue lost is handed over again by the reconciler. Statements that other
 * writers run inside their own (the publisher's fan-out, the purge, an endpoint's deletion) are
 * built here and returned unsent. Reads are in delivery-reads.ts.
 */

/**
 * A pending delivery of each event of `events` (the name of a relation of (id, owner_id, type):
 * events just published) to each endpoint of its owner that subscribes to its type, as a statement
 * for the publisher's data-modifying CTE (unsent; publishEvents in outbox.ts). One row per delivery.
 */
export const fanOutDeliveries = (tx: Sql, events: string) => tx`
  insert into webhook_deliveries (endpoint_id, event_id)
  select ep.id, m.id from ${tx(events)} m
  join webhook_endpoints ep on ep.owner_id = m.owner_id and ep.deleted_at is null
    and (ep.event_types is null or m.type = any(ep.event_types))
  order by m.id, ep.id
  returning 1`;

/**
 * Up to `limit` deliveries of events whose id is below `bound` (older than the purge's cut-off:
 * event ids are time-sortable), as a statement for the purge's data-modifying CTE (unsent;
 * purgeEvents in outbox.ts). A delivery names its event without a foreign key (migration 00012),
 * so this range also catches a delivery whose event is already gone. One row per delivery.
 */
export const purgeDeliveries = (tx: Sql, bound: string, limit: number) => tx`
  delete from webhook_deliveries where id in (
    select id from webhook_deliveries where event_id < ${bound} limit ${limit})
  returning 1`;

/** Drop an endpoint's pending deliveries (it was deleted): failed, not handed to the queue any more. */
export async function dropPendingDeliveries(sql: Sql, endpointId: string): Promise<void> {
  await sql`update webhook_deliveries set status = 'failed', error = 'endpoint deleted', enqueued_at = null, job_id = null
            where endpoint_id = ${endpointId} and status = 'pending'`;
}

/** Deliver again, to one endpoint, every published event it subscribes to created at or after `since`. */
export async function replayEvents(sql: Sql, endpointId: string, since: Date): Promise<number> {
  const rows = await sql`
    insert into webhook_deliveries (endpoint_id, event_id)
    select ep.id, e.id from webhook_endpoints ep
    join events e on e.owner_id = ep.owner_id and e.position is not null and e.created_at >= ${since}
      and (ep.event_types is null or e.type = any(ep.event_types))
    where ep.id = ${endpointId} and ep.deleted_at is null
    order by e.position
    returning 1`;
  return rows.length;
}

export interface QueuedDelivery {
  id: number;
  /** The attempt the job is for (1 for the first). */
  attempt: number;
}

/** Due deliveries handed to the queue as one job: `jobId` names it (see claimDueDeliveries). */
export interface DeliveryGroup {
  jobId: string;
  deliveries: QueuedDelivery[];
}

/**
 * Hand out up to `limit` due deliveries, oldest due first, in groups of at most `groupSize` (one
 * queue job each): mark them enqueued under their group's job id and return the groups for the
 * caller to add to the queue. Safe to run in several processes at once (SKIP LOCKED).
 *
 * Within the page, a group holds consecutive deliveries in (endpoint, id) order, so a group mostly
 * serves one endpoint (its secret is decrypted once per job; a slow receiver holds up its own
 * deliveries, not another endpoint's). The job id is deterministic: `whb-<first id>-<digest of
 * every (id, attempt) of the group>`, so handing the same attempts over again as the same group adds
 * no second job, and any other attempt or grouping is another id. The attempt check when the outcome
 * is recorded (recordAttempts) stays the real guard against a duplicate.
 */
export async function claimDueDeliveries(sql: Sql, limit: number, groupSize: number): Promise<DeliveryGroup[]> {
  // Under keyedSettings, like publishEvents: index scans, planned for this claim's parameters.
  const rows = await keyedStatement(
    sql,
    (tx) => tx<{ id: number; attempt: number; jobId: string }[]>`
      with due as materialized (
        select id, endpoint_id, attempts from webhook_deliveries
        where status = 'pending' and enqueued_at is null and next_attempt_at <= now()
        order by next_attempt_at, id limit ${limit}
        for update skip locked
      ), grouped as materialized (
        select id, attempts, (row_number() over (order by endpoint_id, id) - 1) / ${groupSize}::int as g from due
      ), named as materialized (
        select g, 'whb-' || min(id) || '-' || left(md5(string_agg(id || ':' || (attempts + 1), ',' order by id)), 16) as job_id
        from grouped group by g
      )
      update webhook_deliveries d set enqueued_at = now(), job_id = n.job_id
      from grouped g join named n using (g) where d.id = g.id
      returning d.id, d.attempts + 1 as attempt, d.job_id as "jobId"`,
  );
  const groups = new Map<string, QueuedDelivery[]>();
  for (const r of rows.sort((a, b) => a.id - b.id)) {
    const list = groups.get(r.jobId);
    if (list) list.push({ id: r.id, attempt: r.attempt });
    else groups.set(r.jobId, [{ id: r.id, attempt: r.attempt }]);
  }
  return [...groups].map(([jobId, deliveries]) => ({ jobId, deliveries }));
}

export interface AttemptRecord {
  id: number;
  /** The attempt this was (the row's attempts must be one less, or the record is stale and ignored). */
  attempt: number;
  at: Date;
  /**
   * delivered; retry at nextAttemptAt; failed for good (the endpoint becomes failing); or dropped:
   * not attempted, as its endpoint was deleted or its event is gone (failed, with `error`, the
   * attempt count unchanged).
   */
  outcome: 'delivered' | 'retry' | 'failed' | 'dropped';
  nextAttemptAt?: Date;
  responseStatus: number | null;
  responseBody: string | null;
  latencyMs: number | null;
  error: string | null;
}

/**
 * Write the outcomes of a group's attempts, in one statement, each once (guarded by the attempt
 * number: a duplicate job of the same attempt records nothing). Returns the ids recorded; the
 * others were stale. In the same statement, once per endpoint: its latest recorded outcome that
 * says something about it decides its status — delivered brings a failing endpoint back to
 * enabled; a delivery given up marks it failing.
 */
export async function recordAttempts(sql: Sql, records: readonly AttemptRecord[]): Promise<Set<number>> {
  if (records.length === 0) return new Set();
  const col = <T>(f: (r: AttemptRecord) => T) => records.map(f);
  const rows = await keyedStatement(
    sql,
    (tx) => tx<{ id: number }[]>`
    with v as (
      select * from unnest(
        ${col((r) => r.id)}::bigint[], ${col((r) => r.attempt)}::int[], ${col((r) => r.outcome)}::text[],
        ${col((r) => r.at.toISOString())}::timestamptz[], ${col((r) => (r.nextAttemptAt ?? r.at).toISOString())}::timestamptz[],
        ${col((r) => r.responseStatus)}::int[], ${col((r) => r.responseBody)}::text[], ${col((r) => r.latencyMs)}::int[],
        ${col((r) => r.error)}::text[]
      ) as v(id, attempt, outcome, at, next_at, response_status, response_body, latency_ms, error)
    ), recorded as (
      update webhook_deliveries d set
        attempts = case when v.outcome = 'dropped' then d.attempts else v.attempt end,
        last_attempt_at = case when v.outcome = 'dropped' then d.last_attempt_at else v.at end,
        first_attempt_at = case when v.outcome = 'dropped' then d.first_attempt_at else coalesce(d.first_attempt_at, v.at) end,
        status = case v.outcome when 'retry' then 'pending' when 'dropped' then 'failed' else v.outcome end,
        delivered_at = case when v.outcome = 'delivered' then v.at end,
        next_attempt_at = case when v.outcome = 'dropped' then d.next_attempt_at else v.next_at end,
        enqueued_at = null, job_id = null,
        response_status = case when v.outcome = 'dropped' then d.response_status else v.response_status end,
        response_body = case when v.outcome = 'dropped' then d.response_body else v.response_body end,
        latency_ms = case when v.outcome = 'dropped' then d.latency_ms else v.latency_ms end,
        error = v.error
      from v
      where d.id = v.id and d.attempts = v.attempt - 1 and d.status = 'pending'
      returning d.id, d.endpoint_id, v.outcome, v.at
    ), latest as (
      select distinct on (endpoint_id) endpoint_id, outcome from recorded
      where outcome in ('delivered', 'failed') order by endpoint_id, at desc, id desc
    ), endpoints as (${updateEndpointHealth(tx, 'latest')})
    select id from recorded`,
  );
  return new Set(rows.map((r) => Number(r.id)));
}

/**
 * Restart the clock of deliveries handed to the queue: their job is alive, or it was just added
 * again (the reconciler), so they are not suspects until RECONCILER_MIN_AGE_MS has passed again.
 * Each only while still handed over under its `jobId` (null: handed over before jobs were grouped).
 */
export async function touchDeliveries(sql: Sql, deliveries: readonly { id: number; jobId: string | null }[]): Promise<void> {
  if (deliveries.length === 0) return;
  await keyedStatement(
    sql,
    (tx) => tx`update webhook_deliveries d set enqueued_at = now()
            from unnest(${deliveries.map((d) => d.id)}::bigint[], ${deliveries.map((d) => d.jobId)}::text[]) as v(id, job_id)
            where d.id = v.id and d.status = 'pending' and d.enqueued_at is not null and d.job_id is not distinct from v.job_id`,
  );
}
