import type { Sql } from './client.ts';

/**
 * Webhook endpoints (docs/events.md): the one writer of `webhook_endpoints`. An owner registers,
 * rotates and deletes its endpoints here; an endpoint's health (enabled, or failing since a
 * delivery was given up) follows its deliveries' outcomes, through `updateEndpointHealth`, which
 * the deliveries' writer (deliveries.ts) runs in the statement that records them.
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

/**
 * Mark an owner's endpoint deleted (soft: its delivery log stays); undefined if it is not the
 * owner's or already deleted. Its pending deliveries are dropped in the same transaction
 * (deleteEndpoint in webhooks.ts).
 */
export async function markEndpointDeleted(sql: Sql, id: string, ownerId: string): Promise<EndpointRow | undefined> {
  const [row] = await sql<EndpointRow[]>`
    update webhook_endpoints set deleted_at = now(), updated_at = now()
    where id = ${id} and owner_id = ${ownerId} and deleted_at is null
    returning ${sql.unsafe(ENDPOINT_FIELDS)}`;
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

/**
 * Endpoints' health from their deliveries' latest outcomes, as a statement for a data-modifying CTE
 * (unsent). `outcomes` names a relation of (endpoint_id, outcome), one row per endpoint, outcome
 * `delivered` or `failed`: delivered brings a failing endpoint back to enabled; failed marks it
 * failing (since the first such outcome). Returns one row per endpoint changed.
 */
export const updateEndpointHealth = (tx: Sql, outcomes: string) => tx`
  update webhook_endpoints ep set
    status = case when l.outcome = 'delivered' then 'enabled' else 'failing' end,
    failing_since = case when l.outcome = 'delivered' then null else coalesce(ep.failing_since, now()) end,
    updated_at = now()
  from ${tx(outcomes)} l
  where ep.id = l.endpoint_id and (l.outcome = 'failed' or ep.status = 'failing')
  returning 1`;
