import { displayPrefix, generateApiKey, hashApiKey, isWellFormedApiKey, newId } from '@quest/domain';
import type { Sql } from '../client.ts';
import { AdminError, requireOwner } from './errors.ts';
import { checkLimit, type ListOptions, type ListPage, page } from './lists.ts';

/**
 * API keys: issued, revoked and listed by the operator. A key is returned once, at creation; only
 * its SHA-256 is stored. The API authenticates keys with `findApiKeyWithQuest` (reads.ts).
 */

export interface ApiKeyRecord {
  id: string;
  ownerId: string;
  prefix: string;
  createdAt: Date;
  revokedAt: Date | null;
}

export interface IssuedKey {
  apiKey: string;
  key: ApiKeyRecord;
}

/** A new key for the owner, or null when there is no such owner; createOwner calls it inside its transaction. */
export async function insertKey(sql: Sql, ownerId: string): Promise<IssuedKey | null> {
  const apiKey = generateApiKey();
  const [row] = await sql<{ id: string; owner_id: string; prefix: string; created_at: Date }[]>`
    insert into api_keys (id, owner_id, key_hash, prefix)
    select ${newId('key')}, o.id, ${hashApiKey(apiKey)}, ${displayPrefix(apiKey)} from owners o where o.id = ${ownerId}
    returning id, owner_id, prefix, created_at`;
  if (!row) return null;
  return { apiKey, key: { id: row.id, ownerId: row.owner_id, prefix: row.prefix, createdAt: row.created_at, revokedAt: null } };
}

export async function createApiKey(sql: Sql, ownerId: string): Promise<IssuedKey> {
  const issued = await insertKey(sql, ownerId);
  if (!issued) throw new AdminError('OWNER_NOT_FOUND', `owner ${JSON.stringify(ownerId)} not found`);
  return issued;
}

export type KeyReference = { apiKey: string } | { keyId: string };

const KEY_ID = /^key_[0-9a-z]{1,64}$/;

/**
 * Revoke a key named by its id (`key_…`, as `listApiKeys` shows it) or given in full (`sk_…`).
 * `alreadyRevoked` tells a second revocation from the first; the first revocation time is kept.
 */
export async function revokeKey(sql: Sql, ref: KeyReference): Promise<{ key: ApiKeyRecord; alreadyRevoked: boolean }> {
  const byId = 'keyId' in ref;
  const notFound = new AdminError(
    'API_KEY_NOT_FOUND',
    byId ? `API key ${JSON.stringify(ref.keyId)} not found` : `API key ${displayPrefix(ref.apiKey)}… not found`,
  );
  if (byId ? !KEY_ID.test(ref.keyId) : !isWellFormedApiKey(ref.apiKey)) throw notFound;
  const match = byId ? sql`id = ${ref.keyId}` : sql`key_hash = ${hashApiKey(ref.apiKey)}`;
  type Row = { id: string; owner_id: string; prefix: string; created_at: Date; revoked_at: Date };
  const toKey = (row: Row): ApiKeyRecord => ({
    id: row.id,
    ownerId: row.owner_id,
    prefix: row.prefix,
    createdAt: row.created_at,
    revokedAt: row.revoked_at,
  });
  const [revoked] = await sql<Row[]>`
    update api_keys set revoked_at = now() where ${match} and revoked_at is null
    returning id, owner_id, prefix, created_at, revoked_at`;
  if (revoked) return { key: toKey(revoked), alreadyRevoked: false };
  // Not updated: unknown, or revoked before (a revocation is never undone, so this cannot race).
  const [existing] = await sql<Row[]>`select id, owner_id, prefix, created_at, revoked_at from api_keys where ${match}`;
  if (!existing) throw notFound;
  return { key: toKey(existing), alreadyRevoked: true };
}

/** API keys (never the secret: id, display prefix, owner, times), optionally of one owner. */
export async function listApiKeys(sql: Sql, opts: ListOptions<string> & { ownerId?: string }): Promise<ListPage<ApiKeyRecord>> {
  checkLimit(opts.limit);
  if (opts.ownerId !== undefined) await requireOwner(sql, opts.ownerId);
  const rows = await sql<{ id: string; owner_id: string; prefix: string; created_at: Date; revoked_at: Date | null }[]>`
    select id, owner_id, prefix, created_at, revoked_at from api_keys
    where ${opts.after === undefined ? sql`true` : sql`id > ${opts.after}`}
      and ${opts.ownerId === undefined ? sql`true` : sql`owner_id = ${opts.ownerId}`}
    order by id limit ${opts.limit + 1}`;
  return page(rows, opts.limit, (r) => ({
    id: r.id,
    ownerId: r.owner_id,
    prefix: r.prefix,
    createdAt: r.created_at,
    revokedAt: r.revoked_at,
  }));
}
