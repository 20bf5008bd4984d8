import type { Sql } from './client.ts';
import { BATCH_COLUMNS, type BatchRow } from './lifecycle.ts';

/**
 * What the browser console (/console) reads and writes besides what the API routes and the
 * operator's functions already do: its sessions (see migration 00009), an owner's quests and
 * batches, and a quest's recent history for its charts.
 */

export type ConsoleSessionRow =
  | { kind: 'owner'; ownerId: string; ownerName: string; keyId: string; csrfToken: string; expiresAt: Date }
  | { kind: 'operator'; adminTokenHash: Buffer; csrfToken: string; expiresAt: Date };

export async function insertConsoleSession(
  sql: Sql,
  session: { tokenHash: Buffer; csrfToken: string; expiresAt: Date } & ({ keyId: string } | { adminTokenHash: Buffer }),
): Promise<void> {
  const keyId = 'keyId' in session ? session.keyId : null;
  const adminTokenHash = 'adminTokenHash' in session ? session.adminTokenHash : null;
  // Sign-ins are rare: each one also clears the sessions that have expired since.
  await sql.begin(async (tx) => {
    await tx`delete from console_sessions where expires_at < now()`;
    await tx`
      insert into console_sessions (token_hash, api_key_id, admin_token_hash, csrf_token, expires_at)
      values (${session.tokenHash}, ${keyId}, ${adminTokenHash}, ${session.csrfToken}, ${session.expiresAt})`;
  });
}

/** A live session: not expired, and for an owner's, its key not revoked. */
export async function findConsoleSession(sql: Sql, tokenHash: Buffer): Promise<ConsoleSessionRow | undefined> {
  const [row] = await sql<
    {
      api_key_id: string | null;
      admin_token_hash: Buffer | null;
      csrf_token: string;
      expires_at: Date;
      owner_id: string | null;
      owner_name: string | null;
    }[]
  >`
    select s.api_key_id, s.admin_token_hash, s.csrf_token, s.expires_at, k.owner_id, o.name as owner_name
    from console_sessions s
    left join api_keys k on k.id = s.api_key_id
    left join owners o on o.id = k.owner_id
    where s.token_hash = ${tokenHash} and s.expires_at > now()
      and (s.api_key_id is null or (k.revoked_at is null and o.id is not null))`;
  if (!row) return undefined;
  if (row.api_key_id !== null && row.owner_id !== null) {
    return {
      kind: 'owner',
      ownerId: row.owner_id,
      ownerName: row.owner_name ?? '',
      keyId: row.api_key_id,
      csrfToken: row.csrf_token,
      expiresAt: row.expires_at,
    };
  }
  if (row.admin_token_hash !== null) {
    return { kind: 'operator', adminTokenHash: row.admin_token_hash, csrfToken: row.csrf_token, expiresAt: row.expires_at };
  }
  return undefined;
}

export async function deleteConsoleSession(sql: Sql, tokenHash: Buffer): Promise<void> {
  await sql`delete from console_sessions where token_hash = ${tokenHash}`;
}

/** End every session opened with a key (the lookup already refuses them once the key is revoked). */
export async function deleteConsoleSessionsOfKey(sql: Sql, keyId: string): Promise<number> {
  const rows = await sql`delete from console_sessions where api_key_id = ${keyId} returning 1`;
  return rows.length;
}

/** The api_keys row of a key hash, for a sign-in. */
export async function findApiKeyByHash(
  sql: Sql,
  keyHash: Uint8Array,
): Promise<{ id: string; ownerId: string; revokedAt: Date | null } | undefined> {
  const [row] = await sql<{ id: string; owner_id: string; revoked_at: Date | null }[]>`
    select id, owner_id, revoked_at from api_keys where key_hash = ${keyHash}`;
  return row && { id: row.id, ownerId: row.owner_id, revokedAt: row.revoked_at };
}

export interface OwnerQuestRow {
  id: number;
  ownerId: string;
  name: string;
  description: string;
  startAt: Date;
  endAt: Date;
  actionStatus: string;
  totalPoints: number;
  pointsRemaining: number;
  createdAt: Date;
}

const QUEST_FIELDS = (sql: Sql) => sql`
  id, owner_id as "ownerId", name, description, start_at as "startAt", end_at as "endAt",
  action_status as "actionStatus", total_points as "totalPoints", points_remaining as "pointsRemaining",
  created_at as "createdAt"`;

/** An owner's quests, public and private, newest first. */
export async function listOwnerQuests(sql: Sql, ownerId: string, limit = 200): Promise<OwnerQuestRow[]> {
  return sql<OwnerQuestRow[]>`
    select ${QUEST_FIELDS(sql)} from quests where owner_id = ${ownerId} order by id desc limit ${limit}`;
}

export async function getOwnerQuest(sql: Sql, questId: number): Promise<OwnerQuestRow | undefined> {
  const [row] = await sql<OwnerQuestRow[]>`select ${QUEST_FIELDS(sql)} from quests where id = ${questId}`;
  return row;
}

export interface ConsolePayoutRow {
  id: string;
  amount: number;
  createdAt: Date;
  pass: string;
  reversed: number;
}

/** A quest's newest payouts (or an address's, in any letter case), with what reversals took back from each. */
export async function listRecentPayouts(
  sql: Sql,
  questId: number,
  opts: { address?: string | undefined; limit: number },
): Promise<ConsolePayoutRow[]> {
  const rows = await sql<{ id: string; amount: number; created_at: Date; pass_address: string; reversed: string }[]>`
    select p.id, p.amount, p.created_at, a.pass_address,
           (select coalesce(sum(r.amount), 0) from reversals r where r.payout_id = p.id)::text as reversed
    from payouts p join accounts a on a.id = p.account_id
    where p.quest_id = ${questId}
      and ${opts.address ? sql`lower(a.pass_address) = lower(${opts.address})` : sql`true`}
    order by p.seq desc
    limit ${opts.limit}`;
  return rows.map((r) => ({
    id: r.id,
    amount: Number(r.amount),
    createdAt: r.created_at,
    pass: r.pass_address,
    reversed: Number(r.reversed),
  }));
}

export async function getConsolePayout(sql: Sql, questId: number, payoutId: string): Promise<ConsolePayoutRow | undefined> {
  const [row] = await sql<{ id: string; amount: number; created_at: Date; pass_address: string; reversed: string }[]>`
    select p.id, p.amount, p.created_at, a.pass_address,
           (select coalesce(sum(r.amount), 0) from reversals r where r.payout_id = p.id)::text as reversed
    from payouts p join accounts a on a.id = p.account_id
    where p.quest_id = ${questId} and p.id = ${payoutId}`;
  return (
    row && {
      id: row.id,
      amount: Number(row.amount),
      createdAt: row.created_at,
      pass: row.pass_address,
      reversed: Number(row.reversed),
    }
  );
}

/** A quest's newest batches. */
export async function listQuestBatches(sql: Sql, questId: number, limit = 20): Promise<BatchRow[]> {
  return sql<BatchRow[]>`
    select ${sql(BATCH_COLUMNS)} from batches where quest_id = ${questId} order by created_at desc limit ${limit}`;
}

/** A batch's rejected items, in index order: the failed rows of an upload. */
export async function listBatchRejections(
  sql: Sql,
  batchId: string,
): Promise<{ index: number; address: string; points: number; code: string }[]> {
  const rows = await sql<{ item_index: number; address: string; points: string; error_code: string }[]>`
    select item_index, address, points::text as points, error_code
    from allocation_rejections where batch_id = ${batchId} order by item_index`;
  return rows.map((r) => ({ index: r.item_index, address: r.address, points: Number(r.points), code: r.error_code }));
}

export interface ActivityBucket {
  /** Start of the bucket. */
  start: Date;
  credits: number;
  points: number;
  reversed: number;
}

/**
 * A quest's payouts and reversals in buckets of `bucketMinutes` over the last `minutes` minutes
 * (buckets without either are left out): credits per bucket, and with the quest's points_remaining
 * now, its budget at the end of each bucket.
 */
export async function questActivity(sql: Sql, questId: number, minutes: number, bucketMinutes = 1): Promise<ActivityBucket[]> {
  const seconds = bucketMinutes * 60;
  const rows = await sql<{ start: Date; credits: number; points: string; reversed: string }[]>`
    with p as (
      select to_timestamp(floor(extract(epoch from created_at) / ${seconds}) * ${seconds}) as start,
             count(*)::int as credits, sum(amount) as points
      from payouts where quest_id = ${questId} and created_at > now() - make_interval(mins => ${minutes})
      group by 1
    ), r as (
      select to_timestamp(floor(extract(epoch from created_at) / ${seconds}) * ${seconds}) as start, sum(amount) as reversed
      from reversals where quest_id = ${questId} and created_at > now() - make_interval(mins => ${minutes})
      group by 1
    )
    select coalesce(p.start, r.start) as start, coalesce(p.credits, 0) as credits,
           coalesce(p.points, 0)::text as points, coalesce(r.reversed, 0)::text as reversed
    from p full join r on r.start = p.start
    order by 1`;
  return rows.map((r) => ({ start: r.start, credits: r.credits, points: Number(r.points), reversed: Number(r.reversed) }));
}
