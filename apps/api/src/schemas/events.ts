import type { DeliveryLogRow, EndpointRow } from '@quest/db';
import { EVENT_TYPES, eventViewSchema, ID_PARAM_MAX_LENGTH, intQueryParam, WEBHOOK_URL_MAX_LENGTH } from '@quest/domain';
import { z } from 'zod';
import { freeText } from './common.ts';

/** The bodies and views of GET /events and the webhook endpoint routes. */

const ULID = '[0-7][0-9a-hjkmnp-tv-z]{25}';

export const eventIdSchema = z
  .string()
  .max(ID_PARAM_MAX_LENGTH)
  .regex(new RegExp(`^evt_${ULID}$`), 'must be an event id (evt_…)');

const typeList = z
  .string()
  .max(500)
  .transform((v, ctx) => {
    const types = v.split(',').map((t) => t.trim());
    for (const t of types) {
      if (!(EVENT_TYPES as readonly string[]).includes(t)) {
        ctx.addIssue({ code: 'custom', message: `unknown event type: ${t}` });
        return z.NEVER;
      }
    }
    return types;
  })
  .meta({ type: 'string', description: `Only these event types, comma-separated: ${EVENT_TYPES.join(', ')}.` });

export const EVENTS_LIMIT_MAX = 1000;

export const listEventsQuery = z.object({
  after: eventIdSchema.optional().meta({
    description: 'Resume after this event (the last id you processed); from the oldest event kept when omitted.',
  }),
  limit: intQueryParam({
    default: 100,
    min: 1,
    max: EVENTS_LIMIT_MAX,
    description: `Events per page (1..${EVENTS_LIMIT_MAX}, default 100).`,
  }),
  type: typeList.optional(),
});

export const eventListResponse = z
  .object({
    events: z.array(eventViewSchema).meta({ description: 'In feed order: the order in which the decisions committed.' }),
    has_more: z.boolean().meta({ description: 'True when the page is full: ask again with `after` = the last id.' }),
  })
  .meta({ id: 'EventList' });

export const webhookEndpointIdSchema = z
  .string()
  .max(ID_PARAM_MAX_LENGTH)
  .regex(new RegExp(`^whe_${ULID}$`), 'must be a webhook endpoint id (whe_…)')
  .meta({ description: 'Webhook endpoint id (`whe_…`).' });

export const webhookEndpointParams = z.object({ id: webhookEndpointIdSchema });

export const createWebhookEndpointBody = z
  .strictObject({
    url: freeText(WEBHOOK_URL_MAX_LENGTH).min(1).meta({
      description:
        'Where to POST events: https:// (http:// only where the operator set WEBHOOK_ALLOW_PRIVATE_URLS). Private, loopback and link-local addresses are refused, also when a name resolves to one at delivery time.',
    }),
    events: z
      .array(z.enum(EVENT_TYPES))
      .min(1)
      .max(EVENT_TYPES.length)
      .optional()
      .meta({ description: 'Event types to deliver; every type when omitted.' }),
    description: freeText(500).optional(),
  })
  .meta({ example: { url: 'https://example.com/webhooks/quest', events: ['payout.created', 'batch.completed'] } });

/**
 * The earliest `since`: year 1. ISO 8601's four-digit years reach back to year 0 (1 BC), which
 * PostgreSQL's timestamps spell `1 BC` and refuse in this form.
 */
const EARLIEST_SINCE = Date.parse('0001-01-01T00:00:00.000Z');

export const replayBody = z
  .strictObject({
    since: z.iso
      .datetime()
      .refine((value) => Date.parse(value) >= EARLIEST_SINCE, { message: 'must be in year 1 or later' })
      .meta({
        description: 'Deliver again every event created at or after this time (ISO 8601) that the endpoint subscribes to.',
        example: '2026-03-01T00:00:00.000Z',
      }),
  })
  .meta({ example: { since: '2026-03-01T00:00:00.000Z' } });

const endpointView = z
  .object({
    id: webhookEndpointIdSchema,
    url: z.string(),
    description: z.string(),
    events: z.array(z.enum(EVENT_TYPES)).nullable().meta({ description: 'Event types delivered; null: every type.' }),
    status: z.enum(['enabled', 'failing']).meta({
      description:
        'failing: a delivery was retried for the whole retry window (about 3 days) without success; deliveries go on, and the first success makes it enabled again.',
    }),
    failing_since: z.iso.datetime().nullable(),
    created_at: z.iso.datetime(),
    secret: z.string().optional().meta({
      description:
        'The signing secret (`whsec_…`), shown only in the answer that creates or rotates it: store it, it cannot be read again.',
    }),
    previous_secret_expires_at: z.iso.datetime().nullable().meta({
      description: 'After a rotation: until when the previous secret also signs each delivery (24 h).',
    }),
  })
  .meta({ id: 'WebhookEndpoint', description: 'Where events are delivered, signed (Standard Webhooks).' });
export type EndpointView = z.output<typeof endpointView>;

export const endpointResponse = z.object({ endpoint: endpointView }).meta({ id: 'WebhookEndpointResponse' });
export const endpointListResponse = z.object({ endpoints: z.array(endpointView) }).meta({ id: 'WebhookEndpointList' });
export const replayResponse = z
  .object({ deliveries: z.number().int().min(0).meta({ description: 'Deliveries created.' }) })
  .meta({ id: 'ReplayResult' });

const deliveryView = z
  .object({
    id: z.number().int(),
    event_id: z.string(),
    event_type: z.enum(EVENT_TYPES),
    status: z.enum(['pending', 'delivered', 'failed']),
    attempts: z.number().int().min(0),
    next_attempt_at: z.iso.datetime().nullable().meta({ description: 'When pending: when the next attempt is due.' }),
    last_attempt_at: z.iso.datetime().nullable(),
    delivered_at: z.iso.datetime().nullable(),
    response_status: z.number().int().nullable().meta({ description: "The last attempt's HTTP status." }),
    response_body: z.string().nullable().meta({ description: "The first KiB of the last attempt's answer." }),
    latency_ms: z.number().int().nullable(),
    error: z.string().nullable().meta({ description: 'Why the last attempt failed, when it did not get an answer.' }),
  })
  .meta({ id: 'WebhookDelivery', description: 'One event for one endpoint: where its delivery stands.' });

export const deliveryListResponse = z.object({ deliveries: z.array(deliveryView) }).meta({ id: 'WebhookDeliveryList' });
export const deliveriesQuery = z.object({
  status: z.enum(['pending', 'delivered', 'failed']).optional(),
  limit: intQueryParam({ default: 100, min: 1, max: 1000, description: 'Deliveries to return, newest first (1..1000).' }),
});

const iso = (d: Date | null) => (d ? d.toISOString() : null);

export function endpointToView(row: EndpointRow, secret?: string): EndpointView {
  const view: EndpointView = {
    id: row.id,
    url: row.url,
    description: row.description,
    events: (row.eventTypes as EndpointView['events']) ?? null,
    status: row.status,
    failing_since: iso(row.failingSince),
    created_at: row.createdAt.toISOString(),
    previous_secret_expires_at:
      row.previousSecretExpiresAt && row.previousSecretExpiresAt > new Date() ? row.previousSecretExpiresAt.toISOString() : null,
  };
  if (secret) view.secret = secret;
  return view;
}

export function deliveryToView(row: DeliveryLogRow): z.output<typeof deliveryView> {
  return {
    id: row.id,
    event_id: row.eventId,
    event_type: row.eventType as (typeof EVENT_TYPES)[number],
    status: row.status,
    attempts: row.attempts,
    next_attempt_at: row.status === 'pending' ? row.nextAttemptAt.toISOString() : null,
    last_attempt_at: iso(row.lastAttemptAt),
    delivered_at: iso(row.deliveredAt),
    response_status: row.responseStatus,
    response_body: row.responseBody,
    latency_ms: row.latencyMs,
    error: row.error,
  };
}
