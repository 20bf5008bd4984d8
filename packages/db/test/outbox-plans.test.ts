import { describe, expect } from 'vitest';
import { createSql, insertEvents, publishEvents } from '@quest/db';
import { flushTableStats, tableStats, test, testEvents } from '@quest/testing';
import { until } from '@quest/testing/wait';

/**
 * The publisher on a worker that started on a fresh database: postgres.js prepares its statement,
 * and PostgreSQL may cache a generic plan made while `events` was empty. That plan scanned the
 * whole table once per event it numbered — minutes for a 10,000-event backlog, with the feed and
 * every webhook waiting. Its own file: the table must be empty when the plan is first made.
 * Measured in rows read (the table's seq_tup_read), not in time.
 */
const EVENTS = 3000;

describe('the publisher on a database that started empty', () => {
  test(`numbers a ${EVENTS}-event backlog reading each event a bounded number of times`, async ({ database, owner }) => {
    // One connection, so every call runs the same prepared statement.
    const sql = createSql(database.url, { max: 1 });
    try {
      // Statistics of the empty table, as a start-up `analyze` (or the bench's) leaves them.
      await database.sql`analyze events`;
      for (let i = 0; i < 8; i++) expect((await publishEvents(sql, 1000)).published).toBe(0);
      await insertEvents(database.sql, testEvents(owner.id, EVENTS));
      const before = await tableStats(database.sql, 'events');
      let published = 0;
      for (let step = 0; step < 10 && published < EVENTS; step++) published += (await publishEvents(sql, 1000)).published;
      expect(published).toBe(EVENTS);
      // Statistics reach the shared view when the publishing backend flushes them.
      await flushTableStats(sql);
      const after = await until('the publisher’s statistics', 30_000, async () => {
        const s = await tableStats(database.sql, 'events');
        return s.updates - before.updates >= EVENTS ? s : undefined;
      });
      // A page re-read per event numbered would read millions of rows; a plan that scans the table
      // a few times per page reads tens of thousands.
      expect(after.seqRows - before.seqRows).toBeLessThan(30 * EVENTS);
    } finally {
      await sql.end({ timeout: 2 });
    }
  });
});
