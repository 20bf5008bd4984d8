import { describe, expect, it } from 'vitest';
import { A, envelope, FAST_RETRY, json, networkError, payout, scriptedFetch } from '../test/fetch.ts';
import { createQuestClient } from './client.ts';
import { QuestError } from './errors.ts';
import type { RetryEvent } from './transport.ts';

const BASE = 'http://api.test/rewards';

function client(script: Parameters<typeof scriptedFetch>[0], retry: Record<string, number> = {}) {
  const f = scriptedFetch(script);
  const retries: RetryEvent[] = [];
  const quest = createQuestClient({
    baseUrl: BASE,
    apiKey: 'sk_test_test_test_test',
    fetch: f.fetch,
    retry: { ...FAST_RETRY, ...retry },
    onRetry: (e) => retries.push(e),
  });
  return { quest, seen: f.seen, retries, left: f.left };
}

const pending = (id = 'alc_1') => ({ allocation: { id, status: 'pending', updated_at: '2026-03-01T12:00:00.000Z' } });
const request = { questId: 7, address: A, points: 5 };

describe('allocate', () => {
  it('a 200 is a payout; the request carries the key, the API key and the body', async () => {
    const { quest, seen } = client([json(200, { payout: payout() })]);
    const outcome = await quest.allocate(request);
    expect(outcome).toEqual({ kind: 'payout', payout: payout(), replayed: false, idempotencyKey: expect.any(String) });
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ method: 'POST', path: '/rewards/quests/7' });
    expect(seen[0]!.headers.get('idempotency-key')).toBe(outcome.idempotencyKey);
    expect(seen[0]!.headers.get('x-api-key')).toBe('sk_test_test_test_test');
    expect(seen[0]!.headers.get('content-type')).toBe('application/json');
    expect(JSON.parse(seen[0]!.body)).toEqual({ address: A, points: 5 });
  });

  it('each call gets its own key, kept across its retries of network errors, 503 and 429', async () => {
    const { quest, seen, retries } = client([
      networkError(),
      envelope(503, 'QUEUE_UNAVAILABLE', 'Redis is down', { 'retry-after': '0' }),
      envelope(429, 'RATE_LIMITED', 'slow down', { 'retry-after': '0' }),
      json(200, { payout: payout() }, { 'idempotent-replayed': 'true' }),
      json(200, { payout: payout('pay_2') }),
    ]);
    const first = await quest.allocate(request);
    const second = await quest.allocate(request);
    const keys = seen.map((s) => s.headers.get('idempotency-key'));
    expect(new Set(keys.slice(0, 4)).size).toBe(1);
    expect(keys[4]).not.toBe(keys[0]);
    expect(first).toMatchObject({ kind: 'payout', replayed: true, idempotencyKey: keys[0] });
    expect(second).toMatchObject({ kind: 'payout', idempotencyKey: keys[4] });
    expect(retries.map((r) => [r.retry, r.status, r.code])).toEqual([
      [1, undefined, 'NETWORK_ERROR'],
      [2, 503, 'QUEUE_UNAVAILABLE'],
      [3, 429, 'RATE_LIMITED'],
    ]);
    expect(retries[0]!.message).toBe('fetch failed (ECONNREFUSED)');
    expect(retries[1]!.message).toBe('503 QUEUE_UNAVAILABLE: Redis is down');
  });

  it("uses the caller's key, so a repeat of the whole call is safe too", async () => {
    const { quest, seen } = client([
      json(200, { payout: payout() }),
      json(200, { payout: payout() }, { 'idempotent-replayed': 'true' }),
    ]);
    expect(await quest.allocate({ ...request, idempotencyKey: 'order-1' })).toMatchObject({
      replayed: false,
      idempotencyKey: 'order-1',
    });
    expect(await quest.allocate({ ...request, idempotencyKey: 'order-1' })).toMatchObject({
      replayed: true,
      idempotencyKey: 'order-1',
    });
    expect(seen.map((s) => s.headers.get('idempotency-key'))).toEqual(['order-1', 'order-1']);
  });

  it('a decision refusing the credit is a rejection outcome, not an error', async () => {
    const { quest } = client([envelope(400, 'INSUFFICIENT_POINTS', 'not enough', { 'idempotent-replayed': 'true' })]);
    expect(await quest.allocate(request)).toEqual({
      kind: 'rejection',
      code: 'INSUFFICIENT_POINTS',
      message: 'not enough',
      replayed: true,
      idempotencyKey: expect.any(String),
    });
  });

  it('a refused request throws a QuestError that is not retryable, without retrying', async () => {
    for (const [status, code] of [
      [401, 'INVALID_API_KEY'],
      [404, 'QUEST_NOT_FOUND'],
      [400, 'VALIDATION_FAILED'],
      [400, 'IDEMPOTENCY_KEY_REUSED'],
    ] as const) {
      const { quest, seen } = client([envelope(status, code), json(200, { payout: payout() })]);
      const error = await quest.allocate(request).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(QuestError);
      expect(error).toMatchObject({ code, status, retryable: false, requestId: 'req-1', idempotencyKey: expect.any(String) });
      expect(seen).toHaveLength(1);
    }
  });

  it('gives up after the attempts of its policy with a retryable error naming the last failure and the key', async () => {
    const { quest, seen } = client(
      Array.from({ length: 3 }, () => envelope(503, 'DATABASE_UNAVAILABLE', 'PostgreSQL is down', { 'retry-after': '0' })),
      { maxAttempts: 3 },
    );
    const error = (await quest.allocate({ ...request, idempotencyKey: 'k' }).catch((e: unknown) => e)) as QuestError;
    expect(error).toMatchObject({ code: 'DATABASE_UNAVAILABLE', status: 503, retryable: true, attempts: 3, idempotencyKey: 'k' });
    expect(error.message).toBe(
      'allocateQuestPoints: gave up after 3 attempts; last: 503 DATABASE_UNAVAILABLE: PostgreSQL is down',
    );
    expect(seen).toHaveLength(3);
  });

  it('waits out Retry-After, and fails at once when it is longer than the policy accepts', async () => {
    const { quest, retries } = client([
      envelope(429, 'RATE_LIMITED', 'slow down', { 'retry-after': '1' }),
      json(200, { payout: payout() }),
    ]);
    await quest.allocate(request);
    expect(retries[0]!.delayMs).toBeGreaterThanOrEqual(1000);
    const long = client([envelope(429, 'RATE_LIMITED', 'slow down', { 'retry-after': '3600' })]);
    await expect(long.quest.allocate(request)).rejects.toMatchObject({ code: 'RATE_LIMITED', retryable: true, attempts: 1 });
  });

  it('follows a 202 to its decision: a payout, or a rejection', async () => {
    const done = { allocation: { ...pending().allocation, status: 'completed', payout: payout() } };
    const { quest, seen } = client([
      json(202, pending(), { location: '/quests/7/allocations/alc_1' }),
      json(200, pending()),
      json(200, done),
    ]);
    expect(await quest.allocate(request)).toMatchObject({ kind: 'payout', payout: payout(), replayed: false });
    expect(seen.map((s) => `${s.method} ${s.path}`)).toEqual([
      'POST /rewards/quests/7',
      'GET /rewards/quests/7/allocations/alc_1',
      'GET /rewards/quests/7/allocations/alc_1',
    ]);
    const refused = {
      allocation: { ...pending().allocation, status: 'rejected', error: { code: 'ACCOUNT_NOT_FOUND', message: 'no' } },
    };
    const r = client([json(202, pending()), json(200, refused)]);
    expect(await r.quest.allocate(request)).toMatchObject({ kind: 'rejection', code: 'ACCOUNT_NOT_FOUND' });
  });

  it('sends an allocation the service gave up on again, with the same key', async () => {
    const failed = {
      allocation: { ...pending().allocation, status: 'failed', error: { code: 'ALLOCATION_FAILED', message: 'x' } },
    };
    const { quest, seen } = client([json(202, pending()), json(200, failed), json(200, { payout: payout() })]);
    expect(await quest.allocate(request)).toMatchObject({ kind: 'payout' });
    expect(seen.map((s) => s.method)).toEqual(['POST', 'GET', 'POST']);
    expect(seen[2]!.headers.get('idempotency-key')).toBe(seen[0]!.headers.get('idempotency-key'));
  });

  it('an allocation still pending at the deadline throws DEADLINE_EXCEEDED with the key to call again with', async () => {
    const { quest } = client([json(202, pending()), ...Array.from({ length: 50 }, () => json(200, pending()))]);
    const error = await quest.allocate({ ...request, idempotencyKey: 'order-9', deadlineMs: 300 }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'DEADLINE_EXCEEDED', retryable: true, idempotencyKey: 'order-9' });
  });

  it("stops with the caller's abort reason", async () => {
    const controller = new AbortController();
    const { quest } = client([
      (_req) => {
        controller.abort(new Error('shutting down'));
        return envelope(503, 'QUEUE_UNAVAILABLE', 'down', { 'retry-after': '5' });
      },
    ]);
    await expect(quest.allocate({ ...request, signal: controller.signal })).rejects.toThrow('shutting down');
  });

  it('an answer that is not JSON is a BAD_RESPONSE, not retried', async () => {
    const { quest, seen } = client([new Response('<html>', { status: 200, headers: { 'content-type': 'text/html' } })]);
    await expect(quest.allocate(request)).rejects.toMatchObject({ code: 'BAD_RESPONSE', retryable: false });
    expect(seen).toHaveLength(1);
  });
});

describe('reads', () => {
  it('retry transient failures and throw QuestError for a refusal', async () => {
    const quest = { id: 7, name: 'q' };
    const { quest: c, seen } = client([envelope(503, 'DATABASE_UNAVAILABLE', 'down', { 'retry-after': '0' }), json(200, quest)]);
    expect(await c.getQuest(7, { limit: 5 })).toEqual(quest);
    expect(seen.map((s) => s.path)).toEqual(['/rewards/quests/7?limit=5', '/rewards/quests/7?limit=5']);
    const missing = client([envelope(404, 'CAMPAIGN_NOT_FOUND')]);
    await expect(missing.quest.getCampaign(3)).rejects.toMatchObject({ code: 'CAMPAIGN_NOT_FOUND', status: 404 });
    const list = client([json(200, [quest])]);
    expect(await list.quest.listQuests({ owner: A })).toEqual([quest]);
    expect(list.seen[0]!.path).toBe(`/rewards/quests?owner=${A}`);
  });
});
