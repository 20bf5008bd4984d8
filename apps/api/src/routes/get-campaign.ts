import { type CampaignQuestRow, type CampaignRow, getCampaign, listCampaignQuests } from '@quest/db';
import { type CampaignView, campaignIdParamsSchema, campaignViewSchema, DomainError } from '@quest/domain';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { EXAMPLE_CAMPAIGN } from '../openapi/examples.ts';
import { documented, errorResponses } from '../openapi/responses.ts';
import type { ApiDeps } from '../types.ts';
import { publicRead } from '../read-routing.ts';

export function toCampaignView(campaign: CampaignRow, quests: CampaignQuestRow[]): CampaignView {
  return {
    id: campaign.id,
    created_at: campaign.createdAt.toISOString(),
    updated_at: campaign.updatedAt.toISOString(),
    name: campaign.name,
    description: campaign.description,
    start: campaign.startAt.toISOString(),
    end: campaign.endAt.toISOString(),
    is_active: campaign.isActive,
    external_app_id: campaign.externalAppId,
    quests: quests.map((q) => ({
      id: q.id,
      name: q.name,
      created_at: q.createdAt.toISOString(),
      updated_at: q.updatedAt.toISOString(),
      description: q.description,
      start: q.startAt.toISOString(),
      end: q.endAt.toISOString(),
      is_public: q.isPublic,
      total_points: q.totalPoints,
      expected_points_per_completion: q.expectedPointsPerCompletion,
      owner_id: q.ownerId,
      campaign_id: q.campaignId,
    })),
  };
}

/** GET /campaigns/{id}: a campaign with its public quests. No API key needed. */
export const getCampaignRoute: FastifyPluginAsyncZod<{ deps: ApiDeps }> = async (app, { deps }) => {
  app.get(
    '/campaigns/:id',
    {
      schema: {
        operationId: 'getCampaign',
        tags: ['campaigns'],
        summary: 'Get campaign details',
        description:
          'Public: no API key needed. `quests` lists only the public quests of the campaign (ascending id), so this ' +
          'unauthenticated endpoint never discloses a private quest.',
        security: [],
        params: campaignIdParamsSchema,
        response: {
          200: documented(campaignViewSchema, { description: 'The campaign and its public quests.', example: EXAMPLE_CAMPAIGN }),
          ...errorResponses({
            400: {
              description: 'VALIDATION_FAILED (bad campaign id) or CAMPAIGNS_DISABLED.',
              codes: [
                {
                  code: 'VALIDATION_FAILED',
                  message: 'Invalid request: params.id: must be a positive integer',
                  details: [{ location: 'params', path: 'id', code: 'invalid_format', message: 'must be a positive integer' }],
                },
                'CAMPAIGNS_DISABLED',
              ],
            },
            404: { description: 'CAMPAIGN_NOT_FOUND.', codes: ['CAMPAIGN_NOT_FOUND'] },
          }),
        },
      },
    },
    async (request) => {
      deps.flags.require('campaigns');
      const { id } = request.params;
      const [campaign, quests] = await publicRead(deps, (sql) =>
        Promise.all([getCampaign(sql, id), listCampaignQuests(sql, id)]),
      );
      if (!campaign) throw new DomainError('CAMPAIGN_NOT_FOUND');
      return toCampaignView(campaign, quests);
    },
  );
};
