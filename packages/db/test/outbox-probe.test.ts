import { describe, expect } from 'vitest';
import { createSql, insertEvents, publishEvents } from '@quest/db';
import { flushTableStats, tableStats, test, testEvents } from '@quest/testing';
import { until } from '@quest/testing/wait';

/**
 * The pump's idle probe ("is any event unpublished?") on a worker that started on a fresh database:
 * every worker runs it ten times a second. Planned on the statistics of the empty table, it was a
 * sequential scan of `events` (found by auto_explain in the webhooks bench: 1–5 ms a probe, growing
 * with the table) instead of a look into the unpublished-events index. Its own file: the table must
 * be empty when the statistics are taken. Measured in rows read (the table's seq_tup_read).
 */
const EVENTS = 3000;
const PROBES = 40;

describe('the idle probe on a database that started empty', () => {
  test(`finds nothing to publish among ${EVENTS} published events without reading them`, async ({ database, owner }) => {
    // One connection, so every call runs the same prepared statements.
    const sql = createSql(database.url, { max: 1 });
    try {
      // Statistics of the empty table, as a start-up `analyze` (or the bench's) leaves them.
      await database.sql`analyze events`;
      for (let i = 0; i < 8; i++) expect((await publishEvents(sql, 1000)).ran).toBe(false);
      await insertEvents(database.sql, testEvents(owner.id, EVENTS));
      let published = 0;
      for (let step = 0; step < 10 && published < EVENTS; step++) published += (await publishEvents(sql, 1000)).published;
      expect(published).toBe(EVENTS);
      const before = await tableStats(database.sql, 'events');
      for (let i = 0; i < PROBES; i++) expect((await publishEvents(sql, 1000)).ran).toBe(false);
      await flushTableStats(sql);
      // Every probe scans the table once, by an index or sequentially: wait for those statistics.
      const after = await until('the probes’ statistics', 30_000, async () => {
        const s = await tableStats(database.sql, 'events');
        return s.scans - before.scans >= PROBES ? s : undefined;
      });
      // A sequential scan per probe reads all 3,000 published events each time (120,000 rows); a
      // look into the unpublished-events index reads none.
      expect(after.seqRows - before.seqRows).toBeLessThan(EVENTS);
    } finally {
      await sql.end({ timeout: 2 });
    }
  });
});
