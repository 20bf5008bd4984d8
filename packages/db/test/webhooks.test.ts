import { describe, expect } from 'vitest';
import { claimDueDeliveries, insertEvents, publishEvents, recordAttempts } from '@quest/db';
import { createTestEndpoint, handOverAgain, test, testEvents } from '@quest/testing';

describe('webhook deliveries in groups', () => {
  test('claiming names each group by its deliveries and attempts; an attempt is recorded once', async ({ database, owner }) => {
    const { sql } = database;
    await createTestEndpoint(sql, owner.id);
    const events = testEvents(owner.id, 5);
    await insertEvents(sql, events);
    await publishEvents(sql, 100);
    const size = 2;
    const groups = await claimDueDeliveries(sql, 100, size);
    expect(groups).toHaveLength(Math.ceil(events.length / size));
    expect(groups.every((g) => g.deliveries.length <= size && g.deliveries.every((d) => d.attempt === 1))).toBe(true);
    const ids = groups.flatMap((g) => g.deliveries.map((d) => d.id));
    expect(new Set(ids).size).toBe(events.length);
    // Nothing left due: handed over already.
    expect(await claimDueDeliveries(sql, 100, size)).toEqual([]);

    // The same attempts handed over again in the same groups: the same job ids (one job in Redis).
    await handOverAgain(sql, ids);
    const again = await claimDueDeliveries(sql, 100, size);
    expect(again).toEqual(groups);

    // Recorded once: a second record of the same attempt is stale.
    const first = groups[0]!.deliveries[0]!;
    const record = {
      id: first.id,
      attempt: first.attempt,
      at: new Date(),
      outcome: 'retry' as const,
      nextAttemptAt: new Date(),
      responseStatus: 500,
      responseBody: 'no',
      latencyMs: 3,
      error: 'HTTP 500',
    };
    expect(await recordAttempts(sql, [record])).toEqual(new Set([first.id]));
    expect(await recordAttempts(sql, [record])).toEqual(new Set());
    // Its next attempt is another job: another id.
    const [next] = await claimDueDeliveries(sql, 100, size);
    expect(next!.deliveries).toEqual([{ id: first.id, attempt: 2 }]);
    expect(groups.map((g) => g.jobId)).not.toContain(next!.jobId);
  });
});
