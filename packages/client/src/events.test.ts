import { describe, expect, it } from 'vitest';
import { envelope, FAST_RETRY, json, scriptedFetch } from '../test/fetch.ts';
import { createQuestClient } from './client.ts';
import { QuestError } from './errors.ts';

const BASE = 'http://api.test/rewards';

function client(script: Parameters<typeof scriptedFetch>[0]) {
  const f = scriptedFetch(script);
  const quest = createQuestClient({ baseUrl: BASE, apiKey: 'sk_test_test_test_test', fetch: f.fetch, retry: FAST_RETRY });
  return { quest, seen: f.seen };
}

const event = (n: number) => ({
  id: `evt_${String(n).padStart(4, '0')}`,
  type: 'payout.created' as const,
  created_at: '2026-03-01T12:00:00.123Z',
  quest_id: 7,
  allocation_id: `alc_${n}`,
  batch_id: null,
  data: { payout: { id: `pay_${n}` } },
});

describe('events', () => {
  it('iterate walks the feed page by page from the cursor, resuming after the last id, until caught up', async () => {
    const { quest, seen } = client([
      json(200, { events: [event(3), event(4)], has_more: true }),
      json(503, { code: 'QUEUE_UNAVAILABLE', message: 'x' }, { 'retry-after': '0' }),
      json(200, { events: [event(5)], has_more: false }),
    ]);
    const ids: string[] = [];
    for await (const e of quest.events.iterate({ after: 'evt_0002', limit: 2, type: ['payout.created', 'payout.reversed'] }))
      ids.push(e.id);
    expect(ids).toEqual(['evt_0003', 'evt_0004', 'evt_0005']);
    // The 503 was retried with the same cursor; each page asks after the last id it handed out.
    expect(seen.map((s) => s.path)).toEqual([
      '/rewards/events?after=evt_0002&limit=2&type=payout.created%2Cpayout.reversed',
      '/rewards/events?after=evt_0004&limit=2&type=payout.created%2Cpayout.reversed',
      '/rewards/events?after=evt_0004&limit=2&type=payout.created%2Cpayout.reversed',
    ]);
    expect(seen.every((s) => s.headers.get('x-api-key') === 'sk_test_test_test_test')).toBe(true);
  });

  it('list answers one page; an unknown cursor is a QuestError that names the code and is not retried', async () => {
    const { quest, seen } = client([
      json(200, { events: [], has_more: false }),
      envelope(400, 'EVENT_CURSOR_NOT_FOUND', 'No event has this id.'),
    ]);
    expect(await quest.events.list()).toEqual({ events: [], has_more: false });
    expect(seen[0]!.path).toBe('/rewards/events');
    const error = await quest.events.list({ after: 'evt_gone' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(QuestError);
    expect(error).toMatchObject({ code: 'EVENT_CURSOR_NOT_FOUND', retryable: false });
    expect(seen).toHaveLength(2);
  });
});
