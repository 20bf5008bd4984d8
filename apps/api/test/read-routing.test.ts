import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createSql, type Sql } from '@quest/db';
import { type PrivatePostgresPair, startPostgresPair } from '@quest/testing/postgres';
import { lsnValue, ReadRouter } from '../src/read-routing.ts';

/**
 * DATABASE_READ_URL's staleness bound against a real primary and standby of the test's own: public
 * reads go to the standby only while it is known to hold every commit the primary had
 * `maxLagMs` ago, whatever makes it fall behind (here its replay is paused).
 */
const MAX_LAG_MS = 1000;
let pair: PrivatePostgresPair;
let primary: Sql;
let standby: Sql;
let router: ReadRouter;
const logged: string[] = [];

beforeAll(async () => {
  pair = await startPostgresPair();
  primary = createSql(pair.nodeUrl('primary', 'postgres'), { max: 2 });
  standby = createSql(pair.nodeUrl('standby', 'postgres'), { max: 2 });
  await primary`create table notes (id int primary key)`;
  const logger = { info: (_: object, m: string) => logged.push(m), warn: (_: object, m: string) => logged.push(m) };
  router = new ReadRouter(primary, standby, { maxLagMs: MAX_LAG_MS, intervalMs: 100, logger });
  await router.start();
}, 120_000);

afterAll(async () => {
  router?.stop();
  await Promise.all([primary?.end({ timeout: 1 }), standby?.end({ timeout: 1 })]);
  await pair?.stop();
});

const notes = (sql: Sql) => sql<{ id: number; standby: boolean }[]>`select id, pg_is_in_recovery() as standby from notes`;

describe('ReadRouter', () => {
  it('orders WAL positions like pg_lsn', () => {
    expect(lsnValue('0/16B3748') < lsnValue('0/16B3750')).toBe(true);
    expect(lsnValue('1/0') > lsnValue('0/FFFFFFFF')).toBe(true);
  });

  it('reads from the standby while it keeps up', async () => {
    await primary`insert into notes values (1)`;
    await vi.waitFor(
      async () => {
        expect(router.pool()).toBe(standby);
        expect(await router.read(notes)).toEqual([{ id: 1, standby: true }]);
      },
      { timeout: 10_000, interval: 50 },
    );
    expect(logged).toContain('public reads on the read replica');
  });

  it('goes to the primary once the standby may lack more than the bound, and back when it catches up', async () => {
    await standby`select pg_wal_replay_pause()`;
    await primary`insert into notes values (2)`;
    // The standby never gets row 2 while paused: only the primary can answer with it.
    await vi.waitFor(async () => expect((await router.read(notes)).map((r) => r.id).sort()).toEqual([1, 2]), {
      timeout: MAX_LAG_MS + 5_000,
      interval: 50,
    });
    expect(router.pool()).toBe(primary);
    expect(router.stalenessMs).toBeGreaterThan(MAX_LAG_MS);
    expect(logged.at(-1)).toMatch(/^public reads on the primary/);

    await standby`select pg_wal_replay_resume()`;
    await vi.waitFor(
      async () => {
        expect(router.pool()).toBe(standby);
        expect(await router.read(notes)).toEqual([
          { id: 1, standby: true },
          { id: 2, standby: true },
        ]);
      },
      { timeout: 10_000, interval: 50 },
    );
  });
});
