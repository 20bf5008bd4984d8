import {
  deleteEndpoint,
  eventPosition,
  getEndpoint,
  insertEndpoint,
  listDeliveries,
  listEndpoints,
  listEvents,
  replayEvents,
  rotateEndpointSecret,
  type Sql,
} from '@quest/db';
import { checkWebhookUrl, DomainError, encryptSecret, eventView, newId, newWebhookSecret } from '@quest/domain';
import { deliveryToView, endpointToView } from '../schemas/events.ts';

/** How long a rotated-out secret keeps signing beside the new one. */
export const PREVIOUS_SECRET_TTL_MS = 24 * 3_600_000;

/**
 * The owner's side of events: the feed, and webhook endpoints (create with a secret shown once,
 * list, delete, rotate, replay, read the delivery log). The secret is encrypted before it is
 * stored; without WEBHOOK_SECRET_KEY no endpoint can be created.
 */
export class WebhookService {
  constructor(private readonly deps: { sql: Sql; secretKey: Buffer | null; allowPrivateUrls: boolean }) {}

  async events(ownerId: string, q: { after?: string | undefined; limit: number; type?: string[] | undefined }) {
    let after = 0;
    if (q.after) {
      const position = await eventPosition(this.deps.sql, ownerId, q.after);
      if (position === undefined) throw new DomainError('EVENT_CURSOR_NOT_FOUND', undefined, { after: q.after });
      after = position;
    }
    const rows = await listEvents(this.deps.sql, { ownerId, after, limit: q.limit, types: q.type });
    return { events: rows.map(eventView), has_more: rows.length === q.limit };
  }

  private key(): Buffer {
    if (!this.deps.secretKey) throw new DomainError('WEBHOOKS_NOT_CONFIGURED');
    return this.deps.secretKey;
  }

  async create(ownerId: string, body: { url: string; events?: string[] | undefined; description?: string | undefined }) {
    const key = this.key();
    const check = checkWebhookUrl(body.url, { allowPrivate: this.deps.allowPrivateUrls });
    if (!check.ok) throw new DomainError('WEBHOOK_URL_NOT_ALLOWED', `The webhook URL is not allowed: it ${check.reason}.`);
    const id = newId('whe');
    const secret = newWebhookSecret();
    const row = await insertEndpoint(this.deps.sql, {
      id,
      ownerId,
      url: check.url.toString(),
      description: body.description ?? '',
      eventTypes: body.events ? [...new Set(body.events)] : null,
      secretEnc: encryptSecret(secret, key, id),
    });
    return endpointToView(row, secret);
  }

  async list(ownerId: string) {
    return (await listEndpoints(this.deps.sql, ownerId)).map((row) => endpointToView(row));
  }

  async delete(ownerId: string, id: string) {
    const row = await deleteEndpoint(this.deps.sql, id, ownerId);
    if (!row) throw new DomainError('WEBHOOK_ENDPOINT_NOT_FOUND');
    return endpointToView(row);
  }

  async rotate(ownerId: string, id: string) {
    const key = this.key();
    const secret = newWebhookSecret();
    const row = await rotateEndpointSecret(this.deps.sql, {
      id,
      ownerId,
      secretEnc: encryptSecret(secret, key, id),
      previousUntil: new Date(Date.now() + PREVIOUS_SECRET_TTL_MS),
    });
    if (!row) throw new DomainError('WEBHOOK_ENDPOINT_NOT_FOUND');
    return endpointToView(row, secret);
  }

  async replay(ownerId: string, id: string, since: Date) {
    if (!(await getEndpoint(this.deps.sql, id, ownerId))) throw new DomainError('WEBHOOK_ENDPOINT_NOT_FOUND');
    return { deliveries: await replayEvents(this.deps.sql, id, since) };
  }

  async deliveries(ownerId: string, id: string, q: { status?: string | undefined; limit: number }) {
    if (!(await getEndpoint(this.deps.sql, id, ownerId))) throw new DomainError('WEBHOOK_ENDPOINT_NOT_FOUND');
    return (await listDeliveries(this.deps.sql, { endpointId: id, status: q.status, limit: q.limit })).map(deliveryToView);
  }
}
