import type { Transport } from './transport.ts';
import type { Event } from './types.ts';

export interface EventsQuery {
  /** Resume after this event id (the last one you processed); from the oldest kept when omitted. */
  after?: string | undefined;
  /** Only these event types (e.g. `['payout.created', 'payout.reversed']`). */
  type?: readonly Event['type'][] | undefined;
  /** Events per page, 1..1000 (default 100). */
  limit?: number | undefined;
  signal?: AbortSignal | undefined;
}

export interface EventsPage {
  events: Event[];
  has_more: boolean;
}

/** One page of the owner's events (GET /events), with the client's retries. */
export async function listEvents(t: Transport, query: EventsQuery = {}): Promise<EventsPage> {
  const { after, type, limit, signal } = query;
  const q = {
    ...(after !== undefined ? { after } : {}),
    ...(limit !== undefined ? { limit } : {}),
    ...(type !== undefined && type.length > 0 ? { type: type.join(',') } : {}),
  };
  const answer = await t.call('listEvents', (s) => t.api.GET('/events', { params: { query: q }, signal: s }), { signal });
  return t.ok(answer, 'listEvents');
}

/**
 * Every event after `after`, in commit order, page by page, until the feed is caught up. Store
 * each event's id once you have handled it and pass it back as `after` to resume (a process that
 * was down catches up from there; the feed keeps events EVENT_RETENTION_DAYS).
 */
export async function* iterateEvents(t: Transport, query: EventsQuery = {}): AsyncGenerator<Event, void, undefined> {
  let after = query.after;
  for (;;) {
    const page = await listEvents(t, { ...query, ...(after !== undefined ? { after } : {}) });
    for (const event of page.events) {
      yield event;
      after = event.id;
    }
    if (!page.has_more || page.events.length === 0) return;
  }
}
