import { keyedStatement, type Sql } from './client.ts';
import type { QueuedDelivery } from './deliveries.ts';
import type { StoredEvent } from './outbox.ts';

/**
 * Reads of webhook deliveries (written by deliveries.ts): what a delivery job needs, the
 * reconciler's suspects, an endpoint's delivery log and the gauges.
 */

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
