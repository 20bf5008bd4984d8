import { type ActionStatus, ACTION_STATUSES } from '@quest/domain';
import type { Sql } from '../client.ts';
import { AdminError, checkName, checkPoints, checkWindow, isIntId, requireOwner } from './errors.ts';
import { checkLimit, type ListOptions, type ListPage, page } from './lists.ts';

/** The catalogue: campaigns and quests, created and listed by the operator, and a quest's action status. */

export interface CampaignRecord {
  id: number;
  name: string;
  description: string;
  startAt: Date;
  endAt: Date;
  isActive: boolean;
  externalAppId: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface QuestRecord {
  id: number;
  ownerId: string;
  campaignId: number | null;
  name: string;
  description: string;
  startAt: Date;
  endAt: Date;
  isPublic: boolean;
  actionStatus: ActionStatus;
  totalPoints: number;
  pointsRemaining: number;
  expectedPointsPerCompletion: number;
  /** quest.budget_low fires when points_remaining falls to this or below; null: 10 % of total_points. */
  budgetLowThreshold: number | null;
  createdAt: Date;
  updatedAt: Date;
}

interface CampaignRow {
  id: number;
  name: string;
  description: string;
  start_at: Date;
  end_at: Date;
  is_active: boolean;
  external_app_id: string | null;
  created_at: Date;
  updated_at: Date;
}
const toCampaign = (r: CampaignRow): CampaignRecord => ({
  id: r.id,
  name: r.name,
  description: r.description,
  startAt: r.start_at,
  endAt: r.end_at,
  isActive: r.is_active,
  externalAppId: r.external_app_id,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export interface NewCampaign {
  name: string;
  description?: string;
  startAt: Date;
  endAt: Date;
  isActive?: boolean;
  externalAppId?: string | null;
}

export async function createCampaign(sql: Sql, input: NewCampaign): Promise<CampaignRecord> {
  const name = checkName('campaign', input.name);
  checkWindow(input.startAt, input.endAt);
  const [row] = await sql<CampaignRow[]>`
    insert into campaigns (name, description, start_at, end_at, is_active, external_app_id)
    values (${name}, ${input.description ?? ''}, ${input.startAt}, ${input.endAt}, ${input.isActive ?? true}, ${input.externalAppId ?? null})
    returning *`;
  return toCampaign(row!);
}

interface QuestRow {
  id: number;
  owner_id: string;
  campaign_id: number | null;
  name: string;
  description: string;
  start_at: Date;
  end_at: Date;
  is_public: boolean;
  action_status: ActionStatus;
  total_points: number;
  points_remaining: number;
  expected_points_per_completion: number;
  budget_low_threshold: number | null;
  created_at: Date;
  updated_at: Date;
}
const toQuest = (r: QuestRow): QuestRecord => ({
  id: r.id,
  ownerId: r.owner_id,
  campaignId: r.campaign_id,
  name: r.name,
  description: r.description,
  startAt: r.start_at,
  endAt: r.end_at,
  isPublic: r.is_public,
  actionStatus: r.action_status,
  totalPoints: r.total_points,
  pointsRemaining: r.points_remaining,
  expectedPointsPerCompletion: r.expected_points_per_completion,
  budgetLowThreshold: r.budget_low_threshold === null ? null : Number(r.budget_low_threshold),
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export interface NewQuest {
  ownerId: string;
  campaignId?: number | null;
  name: string;
  description?: string;
  startAt: Date;
  endAt: Date;
  totalPoints: number;
  expectedPointsPerCompletion: number;
  isPublic?: boolean;
  /** See QuestRecord.budgetLowThreshold; omitted or null: the default. */
  budgetLowThreshold?: number | null;
}

/** Create a quest with its whole budget unallocated (points_remaining = total_points). */
export async function createQuest(sql: Sql, input: NewQuest): Promise<QuestRecord> {
  const name = checkName('quest', input.name);
  checkWindow(input.startAt, input.endAt);
  checkPoints('total points', input.totalPoints);
  checkPoints('expected points per completion', input.expectedPointsPerCompletion);
  const threshold = input.budgetLowThreshold ?? null;
  if (threshold !== null) checkPoints('budget low threshold', threshold);
  const campaignId = input.campaignId ?? null;
  if (campaignId !== null && !isIntId(campaignId)) throw new AdminError('CAMPAIGN_NOT_FOUND', `campaign ${campaignId} not found`);
  // Owners and campaigns are never deleted, so checking first and inserting after cannot race.
  const [found] = await sql<{ owner: boolean; campaign: boolean }[]>`
    select exists (select 1 from owners where id = ${input.ownerId}) as owner,
           ${campaignId}::int is null or exists (select 1 from campaigns where id = ${campaignId}::int) as campaign`;
  if (!found!.owner) throw new AdminError('OWNER_NOT_FOUND', `owner ${JSON.stringify(input.ownerId)} not found`);
  if (!found!.campaign) throw new AdminError('CAMPAIGN_NOT_FOUND', `campaign ${campaignId} not found`);
  const [row] = await sql<QuestRow[]>`
    insert into quests (owner_id, campaign_id, name, description, start_at, end_at, is_public,
                        total_points, points_remaining, expected_points_per_completion, budget_low_threshold)
    values (${input.ownerId}, ${campaignId}, ${name}, ${input.description ?? ''}, ${input.startAt}, ${input.endAt},
            ${input.isPublic ?? true}, ${input.totalPoints}, ${input.totalPoints}, ${input.expectedPointsPerCompletion}, ${threshold})
    returning *`;
  return toQuest(row!);
}

export async function setQuestActionStatus(sql: Sql, questId: number, status: ActionStatus): Promise<QuestRecord> {
  if (!ACTION_STATUSES.includes(status)) {
    throw new AdminError('INVALID_INPUT', `action status must be one of ${ACTION_STATUSES.join(', ')}`);
  }
  if (!isIntId(questId)) throw new AdminError('QUEST_NOT_FOUND', `quest ${questId} not found`);
  const [row] = await sql<QuestRow[]>`
    update quests set action_status = ${status}, updated_at = now() where id = ${questId} returning *`;
  if (!row) throw new AdminError('QUEST_NOT_FOUND', `quest ${questId} not found`);
  return toQuest(row);
}

/**
 * Move a quest's window. Decisions read the window in their own transaction, so the next one made
 * after this commits follows it.
 */
export async function setQuestWindow(sql: Sql, questId: number, startAt: Date, endAt: Date): Promise<QuestRecord> {
  checkWindow(startAt, endAt);
  if (!isIntId(questId)) throw new AdminError('QUEST_NOT_FOUND', `quest ${questId} not found`);
  const [row] = await sql<QuestRow[]>`
    update quests set start_at = ${startAt}, end_at = ${endAt}, updated_at = now() where id = ${questId} returning *`;
  if (!row) throw new AdminError('QUEST_NOT_FOUND', `quest ${questId} not found`);
  return toQuest(row);
}

/**
 * Set the quest's quest.budget_low threshold (null: back to 10 % of total_points). It takes effect
 * from the next decision: an event fires when points_remaining crosses it from above.
 */
export async function setQuestBudgetLowThreshold(sql: Sql, questId: number, threshold: number | null): Promise<QuestRecord> {
  if (threshold !== null) checkPoints('budget low threshold', threshold);
  if (!isIntId(questId)) throw new AdminError('QUEST_NOT_FOUND', `quest ${questId} not found`);
  const [row] = await sql<QuestRow[]>`
    update quests set budget_low_threshold = ${threshold}, updated_at = now() where id = ${questId} returning *`;
  if (!row) throw new AdminError('QUEST_NOT_FOUND', `quest ${questId} not found`);
  return toQuest(row);
}

export type CampaignListItem = CampaignRecord & { quests: number };

export async function listCampaigns(sql: Sql, opts: ListOptions<number>): Promise<ListPage<CampaignListItem>> {
  checkLimit(opts.limit);
  const rows = await sql<(CampaignRow & { quests: number })[]>`
    select c.*, (select count(*)::int from quests q where q.campaign_id = c.id) as quests
    from campaigns c
    where ${opts.after === undefined ? sql`true` : sql`c.id > ${opts.after}`}
    order by c.id limit ${opts.limit + 1}`;
  return page(rows, opts.limit, (r) => ({ ...toCampaign(r), quests: r.quests }));
}

/** Quests, public and private, optionally of one owner and/or one campaign. */
export async function listQuests(
  sql: Sql,
  opts: ListOptions<number> & { ownerId?: string; campaignId?: number },
): Promise<ListPage<QuestRecord>> {
  checkLimit(opts.limit);
  if (opts.ownerId !== undefined) await requireOwner(sql, opts.ownerId);
  if (opts.campaignId !== undefined) {
    const [row] = isIntId(opts.campaignId) ? await sql`select 1 from campaigns where id = ${opts.campaignId}` : [];
    if (!row) throw new AdminError('CAMPAIGN_NOT_FOUND', `campaign ${opts.campaignId} not found`);
  }
  const rows = await sql<QuestRow[]>`
    select * from quests
    where ${opts.after === undefined ? sql`true` : sql`id > ${opts.after}`}
      and ${opts.ownerId === undefined ? sql`true` : sql`owner_id = ${opts.ownerId}`}
      and ${opts.campaignId === undefined ? sql`true` : sql`campaign_id = ${opts.campaignId}`}
    order by id limit ${opts.limit + 1}`;
  return page(rows, opts.limit, toQuest);
}
