import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { EXAMPLE_ENDPOINT } from '../openapi/examples.ts';
import { documented, errorResponses } from '../openapi/responses.ts';
import { apiKeyHeaders } from '../schemas/common.ts';
import { endpointListResponse } from '../schemas/events.ts';
import type { RouteDeps } from '../types.ts';

/** GET /webhook-endpoints: the owner's endpoints (without their secrets), with their status. */
export const listWebhookEndpointsRoute: FastifyPluginAsyncZod<{ deps: RouteDeps }> = async (app, { deps }) => {
  app.get(
    '/webhook-endpoints',
    {
      schema: {
        operationId: 'listWebhookEndpoints',
        summary: 'List webhook endpoints',
        description:
          "The owner's endpoints, oldest first, without their secrets; `status` is failing once a delivery to one was given up after the retry window.",
        tags: ['webhooks'],
        security: [{ apiKey: [] }],
        headers: apiKeyHeaders,
        response: {
          200: documented(endpointListResponse, {
            description: "The owner's endpoints, oldest first; `status` failing when deliveries to one were given up.",
            example: { endpoints: [EXAMPLE_ENDPOINT] },
          }),
          ...errorResponses({ 401: { description: 'INVALID_API_KEY.', codes: ['INVALID_API_KEY'] } }),
        },
      },
    },
    async (request) => {
      const { ownerId } = await deps.auth.authenticate(request.headers['x-api-key']);
      return { endpoints: await deps.webhooks.list(ownerId) };
    },
  );
};
