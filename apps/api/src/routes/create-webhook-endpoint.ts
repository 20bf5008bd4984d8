import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { sendAnswer } from '../commands/answer.ts';
import { keyCaller } from '../commands/caller.ts';
import { EXAMPLE_ENDPOINT } from '../openapi/examples.ts';
import { documented, errorResponses } from '../openapi/responses.ts';
import { apiKeyHeaders, validationExample } from '../schemas/common.ts';
import { createWebhookEndpointBody, endpointResponse } from '../schemas/events.ts';
import type { RouteDeps } from '../types.ts';

/** POST /webhook-endpoints: subscribe a URL to the owner's events; the answer holds the signing secret, once. */
export const createWebhookEndpointRoute: FastifyPluginAsyncZod<{ deps: RouteDeps }> = async (app, { deps }) => {
  app.post(
    '/webhook-endpoints',
    {
      schema: {
        operationId: 'createWebhookEndpoint',
        summary: 'Create a webhook endpoint',
        description:
          'Events are POSTed to the URL signed per the Standard Webhooks specification (webhook-id, webhook-timestamp, webhook-signature), retried with backoff for about 3 days. The answer carries the signing secret; it is never shown again.',
        tags: ['webhooks'],
        security: [{ apiKey: [] }],
        headers: apiKeyHeaders,
        body: createWebhookEndpointBody,
        response: {
          200: documented(endpointResponse, {
            description: 'The endpoint, with its signing secret (shown this once).',
            example: { endpoint: { ...EXAMPLE_ENDPOINT, secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' } },
          }),
          ...errorResponses({
            400: {
              description: 'VALIDATION_FAILED (bad body) or WEBHOOK_URL_NOT_ALLOWED (not https, credentials, a private address).',
              codes: [
                validationExample('url', 'Too small: expected string to have >=1 characters'),
                { code: 'WEBHOOK_URL_NOT_ALLOWED', message: 'The webhook URL is not allowed: it must be https://.' },
              ],
            },
            401: { description: 'INVALID_API_KEY.', codes: ['INVALID_API_KEY'] },
            503: {
              description: 'WEBHOOKS_NOT_CONFIGURED (the operator set no WEBHOOK_SECRET_KEY) or DATABASE_UNAVAILABLE.',
              codes: ['WEBHOOKS_NOT_CONFIGURED', 'DATABASE_UNAVAILABLE'],
            },
          }),
        },
      },
    },
    async (request, reply) =>
      sendAnswer(reply, await deps.commands.createEndpoint(keyCaller(deps.auth, request, reply), request.body)),
  );
};
