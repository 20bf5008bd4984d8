import type { ActionStatus } from '@quest/domain';
import type { Sql } from './client.ts';
import type { CampaignRecord } from './admin/catalog.ts';

/**
 * Read-side queries of the HTTP API. Each answers from one indexed statement and returns plain
 * rows (camelCase, Dates); shaping them into HTTP views is the API's job.
 */

export interface Page {
  limit: number;
  offset: number;
}

export interface ApiKeyQuestRow {
  ownerId: string;
  revokedAt: Date | null;
  /** Null when no quest has the requested id. */
  questId: number | null;
  questOwnerId: string | null;
}

/**
 * The API key with this hash, together with the owner of the requested quest, in one statement:
 * undefined when no key has the hash.
 */
export async function findApiKeyWithQuest(sql: Sql, keyHash: Uint8Array, questId: number): Promise<ApiKeyQuestRow | undefined> {
  const [row] = await sql<ApiKeyQuestRow[]>`
    select k.owner_id as "ownerId", k.revoked_at as "revokedAt", q.id as "questId", q.owner_id as "questOwnerId"
    from api_keys k
    left join quests q on q.id = ${questId}
    where k.key_hash = ${keyHash}`;
  return row;
}

export interface QuestDetailRow {
  id: number;
  name: string;
  description: string;
  totalPoints: number;
  pointsRemaining: number;
  startAt: Date;
  endAt: Date;
  actionStatus: ActionStatus;
}

export async function getQuestDetail(sql: Sql, questId: number): Promise<QuestDetailRow | undefined> {
  const [row] = await sql<QuestDetailRow[]>`
    select id, name, description, total_points as "totalPoints", points_remaining as "pointsRemaining",
           start_at as "startAt", end_at as "endAt", action_status as "actionStatus"
    from quests
    where id = ${questId}`;
  return row;
}

export interface PayoutRow {
  id: string;
  amount: number;
  createdAt: Date;
  /** Pass address of the receiving account. */
  pass: string;
}

/** A page of a quest's payouts, newest first: by seq, the quest's decision order. */
export async function listQuestPayouts(sql: Sql, questId: number, page: Page): Promise<PayoutRow[]> {
  return sql<PayoutRow[]>`
    select p.id, p.amount, p.created_at as "createdAt", a.pass_address as pass
    from payouts p
    join accounts a on a.id = p.account_id
    where p.quest_id = ${questId}
    order by p.seq desc
    limit ${page.limit} offset ${page.offset}`;
}

export interface PublicQuestRow {
  id: number;
  name: string;
  description: string;
  totalPoints: number;
  expectedPointsPerCompletion: number;
  startAt: Date;
  endAt: Date;
  campaignId: number | null;
  campaignName: string | null;
  campaignDescription: string | null;
}

/**
 * A page of public quests in ascending id order, optionally only those of the owner with this
 * pass address. The address is compared as given: pass it in the checksum form owners are stored in.
 */
export async function listPublicQuests(sql: Sql, filter: Page & { ownerAddress?: string }): Promise<PublicQuestRow[]> {
  return sql<PublicQuestRow[]>`
    select q.id, q.name, q.description, q.total_points as "totalPoints",
           q.expected_points_per_completion as "expectedPointsPerCompletion",
           q.start_at as "startAt", q.end_at as "endAt",
           c.id as "campaignId", c.name as "campaignName", c.description as "campaignDescription"
    from quests q
    left join campaigns c on c.id = q.campaign_id
    where q.is_public
    ${filter.ownerAddress === undefined ? sql`` : sql`and q.owner_id = (select o.id from owners o where o.pass_address = ${filter.ownerAddress})`}
    order by q.id
    limit ${filter.limit} offset ${filter.offset}`;
}

/** A campaign as stored; the same record the operator commands create. */
export type CampaignRow = CampaignRecord;

export async function getCampaign(sql: Sql, campaignId: number): Promise<CampaignRow | undefined> {
  const [row] = await sql<CampaignRow[]>`
    select id, name, description, start_at as "startAt", end_at as "endAt", is_active as "isActive",
           external_app_id as "externalAppId", created_at as "createdAt", updated_at as "updatedAt"
    from campaigns
    where id = ${campaignId}`;
  return row;
}

export interface CampaignQuestRow {
  id: number;
  name: string;
  description: string;
  createdAt: Date;
  updatedAt: Date;
  startAt: Date;
  endAt: Date;
  isPublic: boolean;
  totalPoints: number;
  expectedPointsPerCompletion: number;
  ownerId: string;
  campaignId: number;
}

/** The quests of a campaign in ascending id order; private ones only when asked for. */
export async function listCampaignQuests(
  sql: Sql,
  campaignId: number,
  opts: { includePrivate?: boolean } = {},
): Promise<CampaignQuestRow[]> {
  return sql<CampaignQuestRow[]>`
    select id, name, description, created_at as "createdAt", updated_at as "updatedAt",
           start_at as "startAt", end_at as "endAt", is_public as "isPublic", total_points as "totalPoints",
           expected_points_per_completion as "expectedPointsPerCompletion", owner_id as "ownerId", campaign_id as "campaignId"
    from quests
    where campaign_id = ${campaignId} ${opts.includePrivate ? sql`` : sql`and is_public`}
    order by id`;
}

/** Round trip to the server; rejects when the database cannot be reached. */
export async function pingDatabase(sql: Sql): Promise<void> {
  await sql`select 1`;
}
