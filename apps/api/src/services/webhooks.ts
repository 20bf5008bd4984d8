import { eventPosition, getEndpoint, listDeliveries, listEndpoints, listEvents, type Sql } from '@quest/db';
import { DomainError, eventView } from '@quest/domain';
import { deliveryToView, endpointToView } from '../schemas/events.ts';

/** The owner's reads of events: the feed, their webhook endpoints and each one's delivery log (writes: commands/webhooks.ts). */
export class WebhookService {
  constructor(private readonly deps: { sql: Sql }) {}

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

  async list(ownerId: string) {
    return (await listEndpoints(this.deps.sql, ownerId)).map((row) => endpointToView(row));
  }

  async deliveries(ownerId: string, id: string, q: { status?: string | undefined; limit: number }) {
    if (!(await getEndpoint(this.deps.sql, id, ownerId))) throw new DomainError('WEBHOOK_ENDPOINT_NOT_FOUND');
    return (await listDeliveries(this.deps.sql, { endpointId: id, status: q.status, limit: q.limit })).map(deliveryToView);
  }
}
