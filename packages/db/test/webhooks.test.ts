import { describe, expect } from 'vitest';
import { claimDueDeliveries, deleteEndpoint, getEndpoint, insertEvents, publishEvents, recordAttempts } from '@quest/db';
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

describe('an endpoint and its deliveries change together', () => {
  test("deleting an endpoint drops its pending deliveries in the same transaction, and never another owner's", async ({
    database,
    owner,
  }) => {
    const { sql } = database;
    const endpoint = await createTestEndpoint(sql, owner.id);
    await insertEvents(sql, testEvents(owner.id, 3));
    await publishEvents(sql, 100);
    const pending = () =>
      sql<
        { n: number }[]
      >`select count(*)::int as n from webhook_deliveries where endpoint_id = ${endpoint.id} and status = 'pending'`;
    expect(await pending()).toEqual([{ n: 3 }]);

    expect(await deleteEndpoint(sql, endpoint.id, 'own_someone_else')).toBeUndefined();
    expect(await pending()).toEqual([{ n: 3 }]);

    // The second statement fails: the first is rolled back with it, so the endpoint is not deleted.
    await sql`create or replace function refuse_drop() returns trigger language plpgsql as $$
      begin raise exception 'refused'; end $$`;
    await sql`create trigger refuse_drop before update on webhook_deliveries for each statement execute function refuse_drop()`;
    try {
      await expect(deleteEndpoint(sql, endpoint.id, owner.id)).rejects.toThrow('refused');
      expect(await getEndpoint(sql, endpoint.id)).toMatchObject({ id: endpoint.id, deletedAt: null });
    } finally {
      await sql`drop trigger refuse_drop on webhook_deliveries`;
    }

    expect(await deleteEndpoint(sql, endpoint.id, owner.id)).toMatchObject({ id: endpoint.id, deletedAt: expect.any(Date) });
    expect(await pending()).toEqual([{ n: 0 }]);
    const dropped = await sql`select status, error from webhook_deliveries where endpoint_id = ${endpoint.id}`;
    expect(dropped.map((d) => [d.status, d.error])).toEqual([
      ['failed', 'endpoint deleted'],
      ['failed', 'endpoint deleted'],
      ['failed', 'endpoint deleted'],
    ]);
  });

  test('an attempt given up marks its endpoint failing; a later delivery brings it back to enabled', async ({
    database,
    owner,
  }) => {
    const { sql } = database;
    const endpoint = await createTestEndpoint(sql, owner.id);
    await insertEvents(sql, testEvents(owner.id, 2));
    await publishEvents(sql, 100);
    const [a, b] = await sql<{ id: number; attempt: number }[]>`
      select id, attempts + 1 as attempt from webhook_deliveries where endpoint_id = ${endpoint.id} order by id`;
    const record = (d: { id: number; attempt: number }, outcome: 'failed' | 'delivered', at: Date) => ({
      id: d.id,
      attempt: d.attempt,
      at,
      outcome,
      responseStatus: outcome === 'delivered' ? 204 : 500,
      responseBody: null,
      latencyMs: 1,
      error: outcome === 'delivered' ? null : 'HTTP 500',
    });
    await recordAttempts(sql, [record(a!, 'failed', new Date())]);
    expect(await getEndpoint(sql, endpoint.id)).toMatchObject({ status: 'failing', failingSince: expect.any(Date) });
    await recordAttempts(sql, [record(b!, 'delivered', new Date())]);
    expect(await getEndpoint(sql, endpoint.id)).toMatchObject({ status: 'enabled', failingSince: null });
  });
});
