import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { EXAMPLE_EVENT } from '../openapi/examples.ts';
import { documented, errorResponses } from '../openapi/responses.ts';
import { apiKeyHeaders } from '../schemas/common.ts';
import { eventListResponse, listEventsQuery } from '../schemas/events.ts';
import type { RouteDeps } from '../types.ts';

/** GET /events: the owner's events in feed order, resumable from the last id seen (docs/events.md). */
export const listEventsRoute: FastifyPluginAsyncZod<{ deps: RouteDeps }> = async (app, { deps }) => {
  app.get(
    '/events',
    {
      schema: {
        operationId: 'listEvents',
        summary: "List the owner's events",
        description:
          "Events of every quest of the API key's owner, in the order their decisions committed, kept EVENT_RETENTION_DAYS (default 30). Resume with `after` = the last id processed; the same events are delivered to webhook endpoints.",
        tags: ['events'],
        security: [{ apiKey: [] }],
        headers: apiKeyHeaders,
        querystring: listEventsQuery,
        response: {
          200: documented(eventListResponse, {
            description: 'A page of events after the cursor.',
            example: { events: [EXAMPLE_EVENT], has_more: false },
          }),
          ...errorResponses({
            400: {
              description:
                'VALIDATION_FAILED (bad after, limit or type) or EVENT_CURSOR_NOT_FOUND (no such event of yours, or purged).',
              codes: ['VALIDATION_FAILED', 'EVENT_CURSOR_NOT_FOUND'],
            },
            401: { description: 'INVALID_API_KEY.', codes: ['INVALID_API_KEY'] },
          }),
        },
      },
    },
    async (request) => {
      const { ownerId } = await deps.auth.authenticate(request.headers['x-api-key']);
      return deps.webhooks.events(ownerId, request.query);
    },
  );
};
