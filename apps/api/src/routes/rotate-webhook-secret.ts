import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { sendAnswer } from '../commands/answer.ts';
import { keyCaller } from '../commands/caller.ts';
import { EXAMPLE_ENDPOINT } from '../openapi/examples.ts';
import { documented, errorResponses } from '../openapi/responses.ts';
import { apiKeyHeaders } from '../schemas/common.ts';
import { endpointResponse, webhookEndpointParams } from '../schemas/events.ts';
import type { RouteDeps } from '../types.ts';

/** POST /webhook-endpoints/{id}/secret: a new signing secret; the old one keeps signing beside it for 24 h. */
export const rotateWebhookSecretRoute: FastifyPluginAsyncZod<{ deps: RouteDeps }> = async (app, { deps }) => {
  app.post(
    '/webhook-endpoints/:id/secret',
    {
      schema: {
        operationId: 'rotateWebhookSecret',
        summary: "Rotate a webhook endpoint's signing secret",
        description:
          'For 24 h every delivery carries two signatures (webhook-signature lists both), so receivers can switch secrets without losing one delivery.',
        tags: ['webhooks'],
        security: [{ apiKey: [] }],
        params: webhookEndpointParams,
        headers: apiKeyHeaders,
        response: {
          200: documented(endpointResponse, {
            description: 'The endpoint with its new secret (shown this once).',
            example: {
              endpoint: {
                ...EXAMPLE_ENDPOINT,
                secret: 'whsec_o2LaLaSwMfKQ9r8GKYqrTwjUPD8ILPZI',
                previous_secret_expires_at: '2026-03-02T12:00:00.000Z',
              },
            },
          }),
          ...errorResponses({
            400: { description: 'VALIDATION_FAILED (bad id).', codes: ['VALIDATION_FAILED'] },
            401: { description: 'INVALID_API_KEY.', codes: ['INVALID_API_KEY'] },
            404: { description: 'WEBHOOK_ENDPOINT_NOT_FOUND.', codes: ['WEBHOOK_ENDPOINT_NOT_FOUND'] },
            503: {
              description: 'WEBHOOKS_NOT_CONFIGURED or DATABASE_UNAVAILABLE.',
              codes: ['WEBHOOKS_NOT_CONFIGURED', 'DATABASE_UNAVAILABLE'],
            },
          }),
        },
      },
    },
    async (request, reply) =>
      sendAnswer(reply, await deps.commands.rotateSecret(keyCaller(deps.auth, request, reply), request.params)),
  );
};
