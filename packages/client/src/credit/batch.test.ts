import { describe, expect, it } from 'vitest';
import { A, envelope, FAST_RETRY, json, scriptedFetch } from '../../test/fetch.ts';
import { Transport } from '../transport.ts';
import { BatchSender } from './batch.ts';

const items = [0, 1, 2, 3].map((i) => ({ address: A, points: i + 1 }));
const batch = (status: string, processed: number, withResults = false) => ({
  batch: {
    id: 'bat_x',
    status,
    total: 4,
    processed,
    succeeded: processed,
    failed: 0,
    created_at: '2026-03-01T12:00:00.000Z',
    updated_at: `2026-03-01T12:00:0${processed}.000Z`,
    ...(withResults ? { results: items.map((_, index) => ({ index, status: 'completed' })) } : {}),
  },
});
const hooks = { onRetry: () => {}, onStall: () => {} };

function sender(script: Parameters<typeof scriptedFetch>[0], stall = { timeoutMs: 60_000, tries: 3 }) {
  const f = scriptedFetch(script);
  const t = new Transport({ baseUrl: 'http://api.test', apiKey: 'sk_test', fetch: f.fetch, retry: FAST_RETRY });
  const s = new BatchSender(t, 7, { respondAsync: true, stall, signal: new AbortController().signal });
  return { s, seen: f.seen };
}

describe('BatchSender', () => {
  it('asks for respond-async, follows the batch, and counts a batch an earlier run created as replayed up to its progress then', async () => {
    const { s, seen } = sender([
      json(202, batch('processing', 3), { location: '/quests/7/batches/bat_x', 'idempotent-replayed': 'true' }),
      json(200, batch('completed', 4, true)),
    ]);
    const accepted = await s.submit('k1', items, hooks);
    expect(accepted.replayedBelow).toBe(3);
    expect(seen[0]).toMatchObject({ method: 'POST', path: '/quests/7/batches' });
    expect(seen[0]!.headers.get('prefer')).toBe('respond-async');
    expect(seen[0]!.headers.get('idempotency-key')).toBe('k1');
    expect(JSON.parse(seen[0]!.body)).toEqual({ allocations: items });
    const progress: number[] = [];
    const results = await s.follow(accepted, 'k1', 4, hooks, (n) => progress.push(n));
    expect(results.map((r) => r.index)).toEqual([0, 1, 2, 3]);
    expect(seen[1]).toMatchObject({ method: 'GET', path: '/quests/7/batches/bat_x?limit=1000&offset=0' });
    expect(progress.at(-1)).toBe(4);
  });

  it('a completed batch replayed in full: every item is a replay', async () => {
    const { s } = sender([json(200, batch('completed', 4, true), { 'idempotent-replayed': 'true' })]);
    expect((await s.submit('k', items, hooks)).replayedBelow).toBe(4);
  });

  it('a batch this run created is new, even when a retry of its own POST is answered as a replay', async () => {
    const { s, seen } = sender([
      envelope(503, 'QUEUE_UNAVAILABLE', 'try again', { 'retry-after': '0' }),
      json(202, batch('processing', 2), { 'idempotent-replayed': 'true' }),
    ]);
    expect((await s.submit('k', items, hooks)).replayedBelow).toBe(0);
    // The retry sent the same body under the same key.
    expect(seen[1]!.body).toBe(seen[0]!.body);
    expect(seen[1]!.headers.get('idempotency-key')).toBe('k');
  });

  it('without the header, nothing is a replay', async () => {
    const { s } = sender([json(200, batch('completed', 4, true))]);
    expect((await s.submit('k', items, hooks)).replayedBelow).toBe(0);
  });

  it('pages results from where it stands, and POSTs a failed batch again with its key to resume it', async () => {
    const some = { ...batch('failed', 2).batch, results: [0, 1].map((index) => ({ index, status: 'completed' })) };
    const rest = { ...batch('completed', 4).batch, results: [2, 3].map((index) => ({ index, status: 'completed' })) };
    const { s, seen } = sender([
      json(202, batch('processing', 0)),
      json(200, { batch: some }),
      json(200, batch('processing', 2)),
      json(200, { batch: rest }),
    ]);
    const accepted = await s.submit('k', items, hooks);
    const results = await s.follow(accepted, 'k', 4, hooks, () => {});
    expect(results.map((r) => r.index)).toEqual([0, 1, 2, 3]);
    expect(seen.map((x) => `${x.method} ${x.path}`)).toEqual([
      'POST /quests/7/batches',
      'GET /quests/7/batches/bat_x?limit=1000&offset=0',
      'POST /quests/7/batches',
      'GET /quests/7/batches/bat_x?limit=1000&offset=2',
    ]);
    expect(seen[2]!.headers.get('idempotency-key')).toBe('k');
  });

  it('a batch that shows no progress is sent again, and after `tries` stalls it stops with STALLED', async () => {
    const stuck = () => json(200, batch('pending', 0));
    const stalls: number[] = [];
    const { s, seen } = sender([json(202, batch('pending', 0)), ...Array.from({ length: 200 }, stuck)], {
      timeoutMs: 50,
      tries: 2,
    });
    const accepted = await s.submit('k', items, hooks);
    const error = await s
      .follow(accepted, 'k', 4, { onRetry: () => {}, onStall: (_ms, n) => stalls.push(n) }, () => {})
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'STALLED', retryable: true, idempotencyKey: 'k' });
    expect(stalls).toEqual([1]);
    expect(seen.filter((x) => x.method === 'POST')).toHaveLength(2);
  });

  it('an answer about another number of items is a BAD_RESPONSE', async () => {
    const { s } = sender([json(200, batch('completed', 4, true))]);
    const accepted = await s.submit('k', items, hooks);
    await expect(s.follow(accepted, 'k', 5, hooks, () => {})).rejects.toMatchObject({ code: 'BAD_RESPONSE' });
  });
});
