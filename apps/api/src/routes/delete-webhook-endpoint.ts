import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { sendAnswer } from '../commands/answer.ts';
import { keyCaller } from '../commands/caller.ts';
import { EXAMPLE_ENDPOINT } from '../openapi/examples.ts';
import { documented, errorResponses } from '../openapi/responses.ts';
import { apiKeyHeaders } from '../schemas/common.ts';
import { endpointResponse, webhookEndpointParams } from '../schemas/events.ts';
import type { RouteDeps } from '../types.ts';

/** DELETE /webhook-endpoints/{id}: stop delivering to an endpoint (its pending deliveries are dropped). */
export const deleteWebhookEndpointRoute: FastifyPluginAsyncZod<{ deps: RouteDeps }> = async (app, { deps }) => {
  app.delete(
    '/webhook-endpoints/:id',
    {
      schema: {
        operationId: 'deleteWebhookEndpoint',
        summary: 'Delete a webhook endpoint',
        description:
          'Stops deliveries to the endpoint at once; its pending deliveries are dropped (failed), its delivery log is kept.',
        tags: ['webhooks'],
        security: [{ apiKey: [] }],
        params: webhookEndpointParams,
        headers: apiKeyHeaders,
        response: {
          200: documented(endpointResponse, { description: 'The endpoint deleted.', example: { endpoint: EXAMPLE_ENDPOINT } }),
          ...errorResponses({
            400: { description: 'VALIDATION_FAILED (bad id).', codes: ['VALIDATION_FAILED'] },
            401: { description: 'INVALID_API_KEY.', codes: ['INVALID_API_KEY'] },
            404: {
              description: 'WEBHOOK_ENDPOINT_NOT_FOUND (none of yours has this id).',
              codes: ['WEBHOOK_ENDPOINT_NOT_FOUND'],
            },
          }),
        },
      },
    },
    async (request, reply) =>
      sendAnswer(reply, await deps.commands.deleteEndpoint(keyCaller(deps.auth, request, reply), request.params)),
  );
};
