import type { ActionStatus } from '@quest/domain';
import { createCampaign, createQuest, setQuestActionStatus, setQuestBudgetLowThreshold } from '@quest/db/catalog';
import type { CommandOutput, Context } from '../context.ts';
import { renderFields } from '../format.ts';

export interface CampaignCreateOptions {
  name: string;
  description: string;
  start: Date;
  end: Date;
  externalAppId?: string;
  inactive?: boolean;
}

export async function campaignCreate(ctx: Context, opts: CampaignCreateOptions): Promise<CommandOutput> {
  const campaign = await createCampaign(await ctx.db(), {
    name: opts.name,
    description: opts.description,
    startAt: opts.start,
    endAt: opts.end,
    isActive: !opts.inactive,
    externalAppId: opts.externalAppId ?? null,
  });
  return {
    json: {
      campaign: {
        id: campaign.id,
        name: campaign.name,
        description: campaign.description,
        start: campaign.startAt.toISOString(),
        end: campaign.endAt.toISOString(),
        isActive: campaign.isActive,
        externalAppId: campaign.externalAppId,
      },
    },
    text: renderFields('Campaign created', [
      ['id', campaign.id],
      ['name', campaign.name],
      ['description', campaign.description],
      ['start', campaign.startAt],
      ['end', campaign.endAt],
      ['active', campaign.isActive],
      ['external app', campaign.externalAppId],
    ]),
  };
}

export interface QuestCreateOptions {
  owner: string;
  campaign?: number;
  name: string;
  description: string;
  start: Date;
  end: Date;
  totalPoints: number;
  expectedPoints: number;
  private?: boolean;
  budgetLowThreshold?: number | null;
}

export async function questCreate(ctx: Context, opts: QuestCreateOptions): Promise<CommandOutput> {
  const quest = await createQuest(await ctx.db(), {
    ownerId: opts.owner,
    campaignId: opts.campaign ?? null,
    name: opts.name,
    description: opts.description,
    startAt: opts.start,
    endAt: opts.end,
    totalPoints: opts.totalPoints,
    expectedPointsPerCompletion: opts.expectedPoints,
    isPublic: !opts.private,
    budgetLowThreshold: opts.budgetLowThreshold ?? null,
  });
  return {
    json: {
      quest: {
        id: quest.id,
        ownerId: quest.ownerId,
        campaignId: quest.campaignId,
        name: quest.name,
        description: quest.description,
        start: quest.startAt.toISOString(),
        end: quest.endAt.toISOString(),
        isPublic: quest.isPublic,
        actionStatus: quest.actionStatus,
        totalPoints: quest.totalPoints,
        pointsRemaining: quest.pointsRemaining,
        expectedPointsPerCompletion: quest.expectedPointsPerCompletion,
        budgetLowThreshold: quest.budgetLowThreshold,
      },
    },
    text: renderFields('Quest created', [
      ['id', quest.id],
      ['owner', quest.ownerId],
      ['campaign', quest.campaignId],
      ['name', quest.name],
      ['description', quest.description],
      ['start', quest.startAt],
      ['end', quest.endAt],
      ['public', quest.isPublic],
      ['action status', quest.actionStatus],
      ['total points', quest.totalPoints],
      ['points remaining', quest.pointsRemaining],
      ['expected points per completion', quest.expectedPointsPerCompletion],
      ['budget low threshold', thresholdText(quest)],
    ]),
  };
}

export async function questAction(ctx: Context, opts: { id: number; status: ActionStatus }): Promise<CommandOutput> {
  const quest = await setQuestActionStatus(await ctx.db(), opts.id, opts.status);
  return {
    json: { quest: { id: quest.id, actionStatus: quest.actionStatus } },
    text: `Quest ${quest.id} action status: ${quest.actionStatus}`,
  };
}

const thresholdText = (q: { budgetLowThreshold: number | null; totalPoints: number }) =>
  q.budgetLowThreshold ?? `default (10 % of ${q.totalPoints})`;

export async function questUpdate(
  ctx: Context,
  opts: { id: number; budgetLowThreshold: number | 'default' },
): Promise<CommandOutput> {
  const threshold = opts.budgetLowThreshold === 'default' ? null : opts.budgetLowThreshold;
  const quest = await setQuestBudgetLowThreshold(await ctx.db(), opts.id, threshold);
  return {
    json: { quest: { id: quest.id, totalPoints: quest.totalPoints, budgetLowThreshold: quest.budgetLowThreshold } },
    text: `Quest ${quest.id} budget low threshold: ${thresholdText(quest)}`,
  };
}
