import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { documented, errorResponses } from '../openapi/responses.ts';
import { apiKeyHeaders } from '../schemas/common.ts';
import { deliveriesQuery, deliveryListResponse, webhookEndpointParams } from '../schemas/events.ts';
import type { RouteDeps } from '../types.ts';

/** GET /webhook-endpoints/{id}/deliveries: the endpoint's delivery log, newest first. */
export const listWebhookDeliveriesRoute: FastifyPluginAsyncZod<{ deps: RouteDeps }> = async (app, { deps }) => {
  app.get(
    '/webhook-endpoints/:id/deliveries',
    {
      schema: {
        operationId: 'listWebhookDeliveries',
        summary: "A webhook endpoint's delivery log",
        description:
          "One entry per event per endpoint, newest first: status, attempts, next attempt, and the last attempt's HTTP status, latency, first KiB of the answer and error.",
        tags: ['webhooks'],
        security: [{ apiKey: [] }],
        params: webhookEndpointParams,
        headers: apiKeyHeaders,
        querystring: deliveriesQuery,
        response: {
          200: documented(deliveryListResponse, {
            description: 'One entry per event per endpoint: status, attempts, the last answer.',
            example: {
              deliveries: [
                {
                  id: 1,
                  event_id: 'evt_01jf8q4g0x7m3r6v2k9d1n5btd',
                  event_type: 'payout.created',
                  status: 'delivered',
                  attempts: 1,
                  next_attempt_at: null,
                  last_attempt_at: '2026-03-01T12:00:00.200Z',
                  delivered_at: '2026-03-01T12:00:00.200Z',
                  response_status: 204,
                  response_body: '',
                  latency_ms: 12,
                  error: null,
                },
              ],
            },
          }),
          ...errorResponses({
            400: { description: 'VALIDATION_FAILED (bad id, status or limit).', codes: ['VALIDATION_FAILED'] },
            401: { description: 'INVALID_API_KEY.', codes: ['INVALID_API_KEY'] },
            404: { description: 'WEBHOOK_ENDPOINT_NOT_FOUND.', codes: ['WEBHOOK_ENDPOINT_NOT_FOUND'] },
          }),
        },
      },
    },
    async (request) => {
      const { ownerId } = await deps.auth.authenticate(request.headers['x-api-key']);
      return { deliveries: await deps.webhooks.deliveries(ownerId, request.params.id, request.query) };
    },
  );
};
