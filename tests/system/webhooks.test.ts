import { randomBytes } from 'node:crypto';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { describe, expect, vi } from 'vitest';
import { WEBHOOK_QUEUE } from '@quest/queue';
import { createAccounts, get, post, type System, startWebhookReceiver, systemTest } from '@quest/testing';

const ITEMS = 1000;
const DELIVERY_BATCH = 25;
const test = systemTest({
  workers: 1,
  partitions: 4,
  env: {
    WEBHOOK_SECRET_KEY: randomBytes(32).toString('hex'),
    WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
    WEBHOOK_POLL_MS: '50',
    JOB_RETENTION_SECONDS: '600',
    WEBHOOK_DELIVERY_BATCH: String(DELIVERY_BATCH),
  },
});

/** Every event of the owner from GET /events, page by page, following `after`. */
async function feed(system: System, apiKey: string, pageSize = 300): Promise<any[]> {
  const all: any[] = [];
  for (;;) {
    const after = all.length ? `&after=${all.at(-1).id}` : '';
    const res = await get(system, `/events?limit=${pageSize}${after}`, { 'x-api-key': apiKey });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    all.push(...res.body.events);
    if (!res.body.has_more) return all;
  }
}

describe('events and webhooks, end to end', () => {
  test(`a receiver verifying with standardwebhooks gets one payout.created per credit of a ${ITEMS}-item batch and of a single allocation, then batch.completed; GET /events has the same ids`, async ({
    system,
    owner,
    makeQuest,
  }) => {
    const receiver = await startWebhookReceiver();
    try {
      const created = await post(system, '/webhook-endpoints', { url: receiver.url }, { 'x-api-key': owner.apiKey });
      expect(created.status, JSON.stringify(created.body)).toBe(200);
      const { endpoint } = created.body;
      expect(endpoint.secret).toMatch(/^whsec_/);
      receiver.secrets = [endpoint.secret];
      // The secret is shown once: never in the list.
      const listed = await get(system, '/webhook-endpoints', { 'x-api-key': owner.apiKey });
      const { secret: _, ...shown } = endpoint;
      expect(listed.body.endpoints).toEqual([shown]);

      const q = await makeQuest({ totalPoints: 10_000_000 });
      const addresses = await createAccounts(system.db.sql, ITEMS);
      const single = await post(system, `/quests/${q}`, { points: 7, address: addresses[0] }, { 'x-api-key': owner.apiKey });
      expect(single.status).toBe(200);
      const res = await post(
        system,
        `/quests/${q}/batches`,
        { allocations: addresses.map((address, i) => ({ address, points: i + 1 })) },
        { 'x-api-key': owner.apiKey, prefer: 'respond-async' },
      );
      expect(res.status, JSON.stringify(res.body)).toBe(202);
      const batchId = res.body.batch.id;

      await vi.waitFor(() => expect(receiver.events.size).toBe(ITEMS + 2), { timeout: 120_000, interval: 100 });
      expect(receiver.invalid).toBe(0);
      const received = [...receiver.events.values()];
      const payouts = received.filter((e) => e.type === 'payout.created');
      expect(payouts).toHaveLength(ITEMS + 1);
      expect(payouts.find((e) => e.batch_id === null)!.data.payout).toEqual(single.body.payout);
      const batchItems = payouts.filter((e) => e.batch_id === batchId).map((e) => e.allocation_id);
      expect(new Set(batchItems)).toEqual(new Set(addresses.map((_, i) => `${batchId}:${i}`)));
      const completed = received.find((e) => e.type === 'batch.completed')!;
      expect(completed.data.batch).toMatchObject({ id: batchId, status: 'completed', total: ITEMS, succeeded: ITEMS });

      // The feed holds the same events, in commit order: the single credit, the batch's items in
      // item order, then its completion.
      const events = await feed(system, owner.apiKey);
      expect(new Set(events.map((e) => e.id))).toEqual(new Set(receiver.events.keys()));
      expect(events[0].data.payout).toEqual(single.body.payout);
      expect(events.slice(1).map((e) => e.allocation_id ?? e.type)).toEqual([
        ...addresses.map((_, i) => `${batchId}:${i}`),
        'batch.completed',
      ]);
      for (const e of events) expect(receiver.events.get(e.id)).toMatchObject({ ...e, receivedAt: expect.any(Number) });

      // The delivery log: one delivered entry per event, with the receiver's answer.
      const log = await get(system, `/webhook-endpoints/${endpoint.id}/deliveries?limit=5`, { 'x-api-key': owner.apiKey });
      expect(log.body.deliveries).toHaveLength(5);
      expect(log.body.deliveries[0]).toMatchObject({ status: 'delivered', attempts: 1, response_status: 204 });

      // Handed out in groups: each job (kept JOB_RETENTION_SECONDS after it completed) carried at
      // most WEBHOOK_DELIVERY_BATCH deliveries, together every delivery, in fewer jobs than deliveries.
      const connection = new Redis(system.redis.url, { maxRetriesPerRequest: 1 });
      const queue = new Queue(WEBHOOK_QUEUE, { connection, prefix: system.redis.prefix });
      try {
        const jobs = await queue.getJobs(['completed']);
        const carried = jobs.flatMap((j) => j.data.deliveries as { id: number }[]);
        expect(Math.max(...jobs.map((j) => j.data.deliveries.length))).toBeLessThanOrEqual(DELIVERY_BATCH);
        expect(carried.length).toBe(ITEMS + 2);
        expect(new Set(carried.map((d) => d.id)).size).toBe(ITEMS + 2);
        expect(jobs.length).toBeGreaterThanOrEqual(Math.ceil((ITEMS + 2) / DELIVERY_BATCH));
        expect(jobs.length).toBeLessThan(ITEMS + 2);
      } finally {
        await queue.close();
        connection.disconnect();
      }
    } finally {
      await receiver.close();
    }
  });

  test('retries a failing receiver until it answers, and a rotated secret signs beside the old one', async ({
    system,
    owner,
    quest,
    accounts,
  }) => {
    const receiver = await startWebhookReceiver();
    try {
      const created = await post(
        system,
        '/webhook-endpoints',
        { url: receiver.url, events: ['payout.created'] },
        { 'x-api-key': owner.apiKey },
      );
      const { endpoint } = created.body;
      receiver.secrets = [endpoint.secret];
      receiver.failWith = 503;
      const first = await post(system, `/quests/${quest}`, { points: 1, address: accounts[0] }, { 'x-api-key': owner.apiKey });
      expect(first.status).toBe(200);
      await vi.waitFor(() => expect(receiver.deliveries).toBeGreaterThan(0), { timeout: 30_000, interval: 50 });
      const failed = await get(system, `/webhook-endpoints/${endpoint.id}/deliveries`, { 'x-api-key': owner.apiKey });
      expect(failed.body.deliveries[0]).toMatchObject({
        status: 'pending',
        attempts: 1,
        response_status: 503,
        response_body: 'receiver failing on purpose',
      });

      // Rotate: for 24 h every delivery carries both signatures; this receiver accepts a delivery
      // only if the old secret and the new one both verify it.
      const rotated = await post(system, `/webhook-endpoints/${endpoint.id}/secret`, {}, { 'x-api-key': owner.apiKey });
      expect(rotated.status, JSON.stringify(rotated.body)).toBe(200);
      expect(rotated.body.endpoint.secret).not.toBe(endpoint.secret);
      expect(rotated.body.endpoint.previous_secret_expires_at).toEqual(expect.any(String));
      receiver.secrets = [endpoint.secret, rotated.body.endpoint.secret];
      receiver.requireAllSecrets = true;
      receiver.failWith = undefined;
      const second = await post(system, `/quests/${quest}`, { points: 2, address: accounts[1] }, { 'x-api-key': owner.apiKey });
      // The first event comes back on its retry (WEBHOOK_RETRY_BASE_MS: 10 s, half of it random).
      await vi.waitFor(() => expect(receiver.events.size).toBe(2), { timeout: 60_000, interval: 100 });
      expect(receiver.invalid).toBe(0);
      expect([...receiver.events.values()].map((e) => e.data.payout.id).sort()).toEqual(
        [first.body.payout.id, second.body.payout.id].sort(),
      );
    } finally {
      await receiver.close();
    }
  });
});
