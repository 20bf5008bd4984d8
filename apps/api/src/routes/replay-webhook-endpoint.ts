import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { sendAnswer } from '../commands/answer.ts';
import { keyCaller } from '../commands/caller.ts';
import { documented, errorResponses } from '../openapi/responses.ts';
import { apiKeyHeaders } from '../schemas/common.ts';
import { replayBody, replayResponse, webhookEndpointParams } from '../schemas/events.ts';
import type { RouteDeps } from '../types.ts';

/** POST /webhook-endpoints/{id}/replay: deliver again every event since a time. */
export const replayWebhookEndpointRoute: FastifyPluginAsyncZod<{ deps: RouteDeps }> = async (app, { deps }) => {
  app.post(
    '/webhook-endpoints/:id/replay',
    {
      schema: {
        operationId: 'replayWebhookEndpoint',
        summary: 'Deliver past events again',
        description:
          'Every event kept (EVENT_RETENTION_DAYS) created at or after `since` that the endpoint subscribes to is delivered again, with its original id as webhook-id.',
        tags: ['webhooks'],
        security: [{ apiKey: [] }],
        params: webhookEndpointParams,
        headers: apiKeyHeaders,
        body: replayBody,
        response: {
          200: documented(replayResponse, { description: 'Deliveries created.', example: { deliveries: 42 } }),
          ...errorResponses({
            400: { description: 'VALIDATION_FAILED (bad id or since).', codes: ['VALIDATION_FAILED'] },
            401: { description: 'INVALID_API_KEY.', codes: ['INVALID_API_KEY'] },
            404: { description: 'WEBHOOK_ENDPOINT_NOT_FOUND.', codes: ['WEBHOOK_ENDPOINT_NOT_FOUND'] },
          }),
        },
      },
    },
    async (request, reply) =>
      sendAnswer(
        reply,
        await deps.commands.replayEvents(keyCaller(deps.auth, request, reply), { ...request.params, ...request.body }),
      ),
  );
};
