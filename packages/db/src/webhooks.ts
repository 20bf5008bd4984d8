import type { Sql } from './client.ts';
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
    await sql`update webhook_deliveries set status = 'failed', error = 'endpoint deleted', enqueued_at = null
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

/**
 * Hand out up to `limit` due deliveries, oldest due first: mark them enqueued and return them for
 * the caller to add to the queue. Safe to run in several processes at once (SKIP LOCKED).
 */
export function claimDueDeliveries(sql: Sql, limit: number): Promise<QueuedDelivery[]> {
  // Planned afresh each time, like publishEvents: a generic plan cached while the table was empty
  // would scan all of it once per claimed row.
  return sql.begin(async (tx) => {
    await tx`set local plan_cache_mode = force_custom_plan`;
    return tx<QueuedDelivery[]>`
      with due as materialized (
        select id from webhook_deliveries
        where status = 'pending' and enqueued_at is null and next_attempt_at <= now()
        order by next_attempt_at, id limit ${limit}
        for update skip locked
      )
      update webhook_deliveries d set enqueued_at = now() from due where d.id = due.id
      returning d.id, d.attempts + 1 as attempt`;
  }) as Promise<QueuedDelivery[]>;
}

export interface DeliveryWork {
  id: number;
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  firstAttemptAt: Date | null;
  endpoint: {
    id: string;
    url: string;
    secretEnc: Uint8Array;
    previousSecretEnc: Uint8Array | null;
    previousSecretExpiresAt: Date | null;
    deleted: boolean;
  };
  event: StoredEvent;
}

interface DeliveryWorkRow {
  id: number;
  status: DeliveryWork['status'];
  attempts: number;
  first_attempt_at: Date | null;
  ep_id: string;
  url: string;
  secret_enc: Uint8Array;
  previous_secret_enc: Uint8Array | null;
  previous_secret_expires_at: Date | null;
  deleted_at: Date | null;
  e_id: string;
  type: StoredEvent['type'];
  created_at: Date;
  quest_id: number | null;
  allocation_id: string | null;
  batch_id: string | null;
  data: unknown;
  position: number;
}

/** What an attempt needs: the delivery, its endpoint (with the encrypted secrets) and its event. */
export async function getDeliveryWork(sql: Sql, id: number): Promise<DeliveryWork | undefined> {
  const [row] = await sql<DeliveryWorkRow[]>`
    select d.id, d.status, d.attempts, d.first_attempt_at,
      ep.id as ep_id, ep.url, ep.secret_enc, ep.previous_secret_enc, ep.previous_secret_expires_at, ep.deleted_at,
      e.id as e_id, e.type, e.created_at, e.quest_id, e.allocation_id, e.batch_id, e.data, e.position
    from webhook_deliveries d
    join webhook_endpoints ep on ep.id = d.endpoint_id
    join events e on e.id = d.event_id
    where d.id = ${id}`;
  if (!row) return undefined;
  return {
    id: Number(row.id),
    status: row.status,
    attempts: row.attempts,
    firstAttemptAt: row.first_attempt_at,
    endpoint: {
      id: row.ep_id,
      url: row.url,
      secretEnc: row.secret_enc,
      previousSecretEnc: row.previous_secret_enc,
      previousSecretExpiresAt: row.previous_secret_expires_at,
      deleted: row.deleted_at !== null,
    },
    event: {
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
}

export interface AttemptRecord {
  id: number;
  /** The attempt this was (the row's attempts must be one less, or the record is stale and ignored). */
  attempt: number;
  at: Date;
  /** delivered; retry at nextAttemptAt; or failed for good (the endpoint becomes failing). */
  outcome: 'delivered' | 'retry' | 'failed';
  nextAttemptAt?: Date;
  responseStatus: number | null;
  responseBody: string | null;
  latencyMs: number;
  error: string | null;
}

/**
 * Write an attempt's outcome, once (guarded by the attempt number: a duplicate job of the same
 * attempt records nothing). Returns false when it was stale. A delivered attempt brings a failing
 * endpoint back to enabled; a delivery given up marks its endpoint failing.
 */
export async function recordAttempt(sql: Sql, a: AttemptRecord): Promise<boolean> {
  const rows = await sql<{ endpoint_id: string }[]>`
    update webhook_deliveries set
      attempts = ${a.attempt}, last_attempt_at = ${a.at}, first_attempt_at = coalesce(first_attempt_at, ${a.at}),
      status = ${a.outcome === 'retry' ? 'pending' : a.outcome},
      delivered_at = ${a.outcome === 'delivered' ? a.at : null},
      next_attempt_at = ${a.nextAttemptAt ?? a.at}, enqueued_at = null,
      response_status = ${a.responseStatus}, response_body = ${a.responseBody}, latency_ms = ${a.latencyMs}, error = ${a.error}
    where id = ${a.id} and attempts = ${a.attempt - 1} and status = 'pending'
    returning endpoint_id`;
  const endpointId = rows[0]?.endpoint_id;
  if (!endpointId) return false;
  if (a.outcome === 'delivered') {
    await sql`update webhook_endpoints set status = 'enabled', failing_since = null, updated_at = now()
              where id = ${endpointId} and status = 'failing'`;
  } else if (a.outcome === 'failed') {
    await sql`update webhook_endpoints set status = 'failing', failing_since = coalesce(failing_since, now()), updated_at = now()
              where id = ${endpointId}`;
  }
  return true;
}

/** A delivery that can no longer be attempted (its endpoint was deleted): failed, with why. */
export async function dropDelivery(sql: Sql, id: number, error: string): Promise<void> {
  await sql`update webhook_deliveries set status = 'failed', error = ${error}, enqueued_at = null where id = ${id} and status = 'pending'`;
}

/** Deliveries handed to the queue more than `olderThanMs` ago and still pending: the reconciler's suspects. */
export function findStrandedDeliveries(sql: Sql, q: { olderThanMs: number; limit: number }): Promise<QueuedDelivery[]> {
  return sql<QueuedDelivery[]>`
    select id, attempts + 1 as attempt from webhook_deliveries
    where status = 'pending' and enqueued_at is not null and enqueued_at < now() - make_interval(secs => ${q.olderThanMs / 1000})
    order by enqueued_at limit ${q.limit}`;
}

/** The queue lost these (or they are alive: `touched` only restarts their clock): due again now. */
export async function requeueDeliveries(sql: Sql, ids: readonly number[], lost: boolean): Promise<void> {
  if (ids.length === 0) return;
  await sql`update webhook_deliveries set ${lost ? sql`enqueued_at = null, next_attempt_at = now()` : sql`enqueued_at = now()`}
            where id = any(${ids as number[]}::bigint[]) and status = 'pending' and enqueued_at is not null`;
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
