import { describe, expect } from 'vitest';
import {
  claimDueDeliveries,
  createSql,
  getDeliveryWorks,
  insertEvents,
  publishEvents,
  recordAttempts,
  type Sql,
} from '@quest/db';
import { createTestEndpoint, flushTableStats, tableStats, test, testEvents } from '@quest/testing';
import { until } from '@quest/testing/wait';

/**
 * The delivery statements on a worker that started on a fresh database (as outbox-plans.test.ts
 * for the publisher): postgres.js prepares each, and PostgreSQL switches a prepared statement to a
 * generic plan after five runs, costed on the table as it was then. Made while
 * `webhook_deliveries` was empty, that plan read the whole table for every group a job read or
 * recorded, until autovacuum's next ANALYZE. Its own file: the table must be empty when the plans
 * are first made. Measured in rows read by sequential scans (seq_tup_read), not in time.
 */
const DELIVERIES = 3000;
const GROUP = 50;

/** Claim every due delivery, read each group and record its attempts as delivered. */
async function deliverAll(sql: Sql): Promise<number> {
  let recorded = 0;
  for (
    let groups = await claimDueDeliveries(sql, 1000, GROUP);
    groups.length;
    groups = await claimDueDeliveries(sql, 1000, GROUP)
  ) {
    for (const g of groups) {
      const works = await getDeliveryWorks(
        sql,
        g.deliveries.map((d) => d.id),
      );
      const at = new Date();
      const done = await recordAttempts(
        sql,
        works.map((w) => ({
          id: w.id,
          attempt: w.attempts + 1,
          at,
          outcome: 'delivered' as const,
          responseStatus: 204,
          responseBody: '',
          latencyMs: 1,
          error: null,
        })),
      );
      recorded += done.size;
    }
  }
  return recorded;
}

describe('delivering on a database that started empty', () => {
  test(`claims, reads and records ${DELIVERIES} deliveries without scanning the table per group`, async ({ database, owner }) => {
    // One connection, so every call runs the same prepared statements.
    const sql = createSql(database.url, { max: 1 });
    try {
      await createTestEndpoint(database.sql, owner.id);
      // Eight rounds of one delivery each while the table is nearly empty, with its statistics.
      for (let i = 0; i < 8; i++) {
        await insertEvents(database.sql, testEvents(owner.id, 1));
        await publishEvents(database.sql, 1000);
        if (i === 0) await database.sql`analyze webhook_deliveries`;
        expect(await deliverAll(sql)).toBe(1);
      }
      await insertEvents(database.sql, testEvents(owner.id, DELIVERIES));
      for (let r = await publishEvents(database.sql, 1000); r.published > 0; r = await publishEvents(database.sql, 1000));
      const before = await tableStats(database.sql, 'webhook_deliveries');
      expect(await deliverAll(sql)).toBe(DELIVERIES);
      await flushTableStats(sql);
      // Every delivery updated twice (claimed, recorded) once the statistics have arrived.
      const after = await until('the delivery statements’ statistics', 30_000, async () => {
        const s = await tableStats(database.sql, 'webhook_deliveries');
        return s.updates - before.updates >= 2 * DELIVERIES ? s : undefined;
      });
      // A scan per group reads the table 2 × 60 times (hundreds of thousands of rows); plans that
      // find each group by its ids read none.
      expect(after.seqRows - before.seqRows).toBeLessThan(DELIVERIES);
    } finally {
      await sql.end({ timeout: 2 });
    }
  });
});
