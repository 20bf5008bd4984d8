import { describe, expect } from 'vitest';
import { claimDueDeliveries, insertEvents, publishEvents } from '@quest/db';
import { DeliveryQueue, redisConnection } from '@quest/queue';
import { createTestEndpoint, test, testEvents } from '@quest/testing';
import { redrives } from '../src/metrics.ts';
import { Reconciler } from '../src/reconciler.ts';

const silent = { info: () => {}, warn: () => {} };

describe('the reconciler and webhook deliveries', () => {
  test('adds a lost delivery job again under its own id, and only restarts the clock of one the queue still carries', async ({
    database,
    redis,
    owner,
  }) => {
    const { sql } = database;
    const endpointId = (await createTestEndpoint(sql, owner.id)).id;
    await insertEvents(sql, testEvents(owner.id, 2));
    await publishEvents(sql, 100);
    const ids = (
      await sql<{ id: number }[]>`select id from webhook_deliveries where endpoint_id = ${endpointId} order by id`
    ).map((r) => r.id);
    expect(ids).toHaveLength(2);
    // Both were handed to the queue a minute ago, as two jobs; only the first one's job is still there.
    const groups = await claimDueDeliveries(sql, 100, 1);
    expect(groups.map((g) => g.deliveries.map((d) => d.id))).toEqual([[ids[0]], [ids[1]]]);
    await sql`update webhook_deliveries set enqueued_at = now() - interval '1 minute' where endpoint_id = ${endpointId}`;
    const connection = redisConnection(redis.url);
    const queue = new DeliveryQueue(connection, redis.prefix);
    await queue.add([groups[0]!], 600);

    const before = (await redrives.get()).values.find((v) => v.labels.kind === 'delivery')?.value ?? 0;
    const reconciler = new Reconciler({
      sql,
      connection,
      prefix: redis.prefix,
      partitions: 2,
      memberId: 'test',
      intervalMs: 60_000,
      minAgeMs: 30_000,
      limit: 100,
      retentionSeconds: 60,
      deliveryQueue: queue,
      logger: silent,
    });
    try {
      // The database's clock before the run: what the run stamps is at or after it.
      const [clock] = await sql<{ started: Date }[]>`select now() as started`;
      const started = clock!.started;
      const run = await reconciler.run();
      expect(run).toMatchObject({ deliveriesChecked: 2, deliveriesRedriven: 1 });
      const rows = await sql<{ id: number; enqueued_at: Date | null; next_attempt_at: Date; job_id: string | null }[]>`
        select id, enqueued_at, next_attempt_at, job_id from webhook_deliveries where endpoint_id = ${endpointId} order by id`;
      // Carried: its clock restarts (it is not suspected again for another minAge).
      expect(rows[0]!.enqueued_at!.getTime()).toBeGreaterThanOrEqual(started.getTime());
      expect(rows[0]!.job_id).toBe(groups[0]!.jobId);
      // Lost: its job is added again, under the same id and with the same attempt, and the row stays
      // handed over to it (its clock restarted), not regrouped into a job of another id.
      expect(rows[1]!.job_id).toBe(groups[1]!.jobId);
      expect(rows[1]!.enqueued_at!.getTime()).toBeGreaterThanOrEqual(started.getTime());
      const readded = await queue.queue.getJob(groups[1]!.jobId);
      expect(readded?.data).toEqual({ deliveries: [{ id: ids[1], attempt: 1 }] });
      expect(await readded!.getState()).toBe('waiting');
      // A late copy of the first add (one that was still on its way) is the same job to BullMQ.
      await queue.add([groups[1]!], 600);
      expect(await queue.queue.getJobCounts('wait')).toEqual({ wait: 2 });
      const after = (await redrives.get()).values.find((v) => v.labels.kind === 'delivery')!.value;
      expect(after - before).toBe(1);
      // Nothing suspect left.
      expect(await reconciler.run()).toMatchObject({ deliveriesChecked: 0, deliveriesRedriven: 0 });
    } finally {
      await reconciler.stop();
      await queue.close();
      connection.disconnect();
    }
  });
});
