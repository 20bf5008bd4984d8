import { keyedStatement, type Sql } from './client.ts';
import type { StoredEvent } from './outbox.ts';

/**
 * Webhook endpoints and their deliveries (docs/events.md). A delivery row is one event for one
 * endpoint: its retry schedule (next_attempt_at) and its log (the last attempt's status code,
 * latency, first KiB of the answer). The schedule is here, not in Redis: the dispatcher hands due
 * deliveries to the queue (enqueued_at), an attempt writes its outcome back, and a delivery the
 * queue lost is handed over again by the reconciler.
 */

export interface EndpointRow {
  id: string;
  ownerId: string;
  url: string;
  description: string;
  eventTypes: string[] | null;
  status: 'enabled' | 'failing';
  failingSince: Date | null;
  createdAt: Date;
  updatedAt: Date;
  deletedAt: Date | null;
  previousSecretExpiresAt: Date | null;
}

const ENDPOINT_FIELDS = `id, owner_id as "ownerId", url, description, event_types as "eventTypes", status,
  failing_since as "failingSince", created_at as "createdAt", updated_at as "updatedAt", deleted_at as "deletedAt",
  previous_secret_expires_at as "previousSecretExpiresAt"`;

export async function insertEndpoint(
  sql: Sql,
  e: { id: string; ownerId: string; url: string; description: string; eventTypes: string[] | null; secretEnc: Buffer },
): Promise<EndpointRow> {
  const [row] = await sql<EndpointRow[]>`
    insert into webhook_endpoints (id, owner_id, url, description, event_types, secret_enc)
    values (${e.id}, ${e.ownerId}, ${e.url}, ${e.description}, ${e.eventTypes}, ${e.secretEnc})
    returning ${sql.unsafe(ENDPOINT_FIELDS)}`;
  return row!;
}

/** Endpoints not deleted, of one owner or (ownerId undefined) of everyone, oldest first. */
export function listEndpoints(sql: Sql, ownerId?: string): Promise<EndpointRow[]> {
  return sql<EndpointRow[]>`
    select ${sql.unsafe(ENDPOINT_FIELDS)} from webhook_endpoints
    where deleted_at is null and (${ownerId ?? null}::text is null or owner_id = ${ownerId ?? null})
    order by created_at, id`;
}

export async function getEndpoint(sql: Sql, id: string, ownerId?: string): Promise<EndpointRow | undefined> {
  const [row] = await sql<EndpointRow[]>`
    select ${sql.unsafe(ENDPOINT_FIELDS)} from webhook_endpoints
    where id = ${id} and deleted_at is null and (${ownerId ?? null}::text is null or owner_id = ${ownerId ?? null})`;
  return row;
}

/** Delete (soft: its delivery log stays) an owner's endpoint; pending deliveries to it are dropped. */
export async function deleteEndpoint(sql: Sql, id: string, ownerId: string): Promise<EndpointRow | undefined> {
  const [row] = await sql<EndpointRow[]>`
    update webhook_endpoints set deleted_at = now(), updated_at = now()
    where id = ${id} and owner_id = ${ownerId} and deleted_at is null
    returning ${sql.unsafe(ENDPOINT_FIELDS)}`;
  if (row) {
    await sql`update webhook_deliveries set status = 'failed', error = 'endpoint deleted', enqueued_at = null, job_id = null
              where endpoint_id = ${id} and status = 'pending'`;
  }
  return row;
}

/** Rotate: the new secret signs from now on; the current one keeps signing beside it until `previousUntil`. */
export async function rotateEndpointSecret(
  sql: Sql,
  r: { id: string; ownerId: string; secretEnc: Buffer; previousUntil: Date },
): Promise<EndpointRow | undefined> {
  const [row] = await sql<EndpointRow[]>`
    update webhook_endpoints set previous_secret_enc = secret_enc, previous_secret_expires_at = ${r.previousUntil},
      secret_enc = ${r.secretEnc}, updated_at = now()
    where id = ${r.id} and owner_id = ${r.ownerId} and deleted_at is null
    returning ${sql.unsafe(ENDPOINT_FIELDS)}`;
  return row;
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
  // Planned afresh each time, like publishEvents: a generic plan cached while the table was empty
  // would scan all of it once per claimed row.
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

export interface DeliveryEndpoint {
  id: string;
  url: string;
  secretEnc: Uint8Array;
  previousSecretEnc: Uint8Array | null;
  previousSecretExpiresAt: Date | null;
  deleted: boolean;
}

export interface DeliveryWork {
  id: number;
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  firstAttemptAt: Date | null;
  /** The job that carries the delivery's current attempt (null: none, or handed over before jobs were grouped). */
  jobId: string | null;
  endpoint: DeliveryEndpoint;
  /** null: the event is gone (purged past retention while this delivery was replayed); nothing to send. */
  event: StoredEvent | null;
}

interface DeliveryWorkRow {
  id: number;
  status: DeliveryWork['status'];
  attempts: number;
  first_attempt_at: Date | null;
  job_id: string | null;
  ep_id: string;
  url: string;
  secret_enc: Uint8Array;
  previous_secret_enc: Uint8Array | null;
  previous_secret_expires_at: Date | null;
  deleted_at: Date | null;
  e_id: string | null;
  type: StoredEvent['type'];
  created_at: Date;
  quest_id: number | null;
  allocation_id: string | null;
  batch_id: string | null;
  data: unknown;
  position: number;
}

/**
 * What the attempts of a group need, in one query: each delivery, its endpoint (with the encrypted
 * secrets) and its event (null if the event is gone), in id order. Ids that no longer exist are
 * absent. An endpoint serving several deliveries is one object, shared by them.
 */
export async function getDeliveryWorks(sql: Sql, ids: readonly number[]): Promise<DeliveryWork[]> {
  if (ids.length === 0) return [];
  const rows = await keyedStatement(
    sql,
    (tx) => tx<DeliveryWorkRow[]>`
    select d.id, d.status, d.attempts, d.first_attempt_at, d.job_id,
      ep.id as ep_id, ep.url, ep.secret_enc, ep.previous_secret_enc, ep.previous_secret_expires_at, ep.deleted_at,
      e.id as e_id, e.type, e.created_at, e.quest_id, e.allocation_id, e.batch_id, e.data, e.position
    from webhook_deliveries d
    join webhook_endpoints ep on ep.id = d.endpoint_id
    left join events e on e.id = d.event_id
    where d.id = any(${ids as number[]}::bigint[])
    order by d.id`,
  );
  const endpoints = new Map<string, DeliveryEndpoint>();
  return rows.map((row) => {
    let endpoint = endpoints.get(row.ep_id);
    if (!endpoint) {
      endpoint = {
        id: row.ep_id,
        url: row.url,
        secretEnc: row.secret_enc,
        previousSecretEnc: row.previous_secret_enc,
        previousSecretExpiresAt: row.previous_secret_expires_at,
        deleted: row.deleted_at !== null,
      };
      endpoints.set(row.ep_id, endpoint);
    }
    return {
      id: Number(row.id),
      status: row.status,
      attempts: row.attempts,
      firstAttemptAt: row.first_attempt_at,
      jobId: row.job_id,
      endpoint,
      event:
        row.e_id === null
          ? null
          : {
              id: row.e_id,
              type: row.type,
              createdAt: row.created_at,
              questId: row.quest_id,
              allocationId: row.allocation_id,
              batchId: row.batch_id,
              data: row.data,
              position: row.position,
            },
    };
  });
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
    ), endpoints as (
      update webhook_endpoints ep set
        status = case when l.outcome = 'delivered' then 'enabled' else 'failing' end,
        failing_since = case when l.outcome = 'delivered' then null else coalesce(ep.failing_since, now()) end,
        updated_at = now()
      from latest l
      where ep.id = l.endpoint_id and (l.outcome = 'failed' or ep.status = 'failing')
      returning 1
    )
    select id from recorded`,
  );
  return new Set(rows.map((r) => Number(r.id)));
}

/** A delivery handed to the queue and still pending: `jobId` names the job that should carry it. */
export interface StrandedDelivery extends QueuedDelivery {
  jobId: string | null;
}

/** Deliveries handed to the queue more than `olderThanMs` ago and still pending: the reconciler's suspects. */
export async function findStrandedDeliveries(sql: Sql, q: { olderThanMs: number; limit: number }): Promise<StrandedDelivery[]> {
  return keyedStatement(
    sql,
    (tx) => tx<StrandedDelivery[]>`
    select id, attempts + 1 as attempt, job_id as "jobId" from webhook_deliveries
    where status = 'pending' and enqueued_at is not null and enqueued_at < now() - make_interval(secs => ${q.olderThanMs / 1000})
    order by enqueued_at limit ${q.limit}`,
  );
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

export interface DeliveryLogRow {
  id: number;
  endpointId: string;
  eventId: string;
  eventType: string;
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  nextAttemptAt: Date;
  lastAttemptAt: Date | null;
  deliveredAt: Date | null;
  responseStatus: number | null;
  responseBody: string | null;
  latencyMs: number | null;
  error: string | null;
  createdAt: Date;
}

/** The delivery log of an endpoint, newest first. */
export function listDeliveries(
  sql: Sql,
  q: { endpointId: string; status?: string | undefined; limit: number },
): Promise<DeliveryLogRow[]> {
  return sql<DeliveryLogRow[]>`
    select d.id, d.endpoint_id as "endpointId", d.event_id as "eventId", e.type as "eventType", d.status, d.attempts,
      d.next_attempt_at as "nextAttemptAt", d.last_attempt_at as "lastAttemptAt", d.delivered_at as "deliveredAt",
      d.response_status as "responseStatus", d.response_body as "responseBody", d.latency_ms as "latencyMs", d.error,
      d.created_at as "createdAt"
    from webhook_deliveries d join events e on e.id = d.event_id
    where d.endpoint_id = ${q.endpointId} and (${q.status ?? null}::text is null or d.status = ${q.status ?? null})
    order by d.id desc limit ${q.limit}`;
}

/** Deliveries by status (a gauge, sampled). */
export async function deliveryCounts(sql: Sql): Promise<{ pending: number; queued: number }> {
  const [row] = await sql<{ pending: number; queued: number }[]>`
    select count(*) filter (where enqueued_at is null)::int as pending, count(*) filter (where enqueued_at is not null)::int as queued
    from webhook_deliveries where status = 'pending'`;
  return row ?? { pending: 0, queued: 0 };
}
