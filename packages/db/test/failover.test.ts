import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { classifyDbError, createSql, readReplicationState, type Sql, synchronousReplicationProblems } from '@quest/db';
import { migrate } from '@quest/db/migrate';
import { type PrivatePostgresPair, startPostgresPair } from '@quest/testing/postgres';

/**
 * postgres.js with a multi-host URL against a real primary and synchronous standby of the test's own
 * (the shared server is never touched). Without patches/postgres+3.4.9.patch a pool accepts a hot
 * standby as `read-write` (PostgreSQL 14+ reports default_transaction_read_only=off there), and
 * while no node is the primary a reconnecting pool runs its queries on the standby.
 */
let pair: PrivatePostgresPair;
const pools: Sql[] = [];
const pool = (url: string, opts: Parameters<typeof createSql>[1] = {}) => {
  const sql = createSql(url, { max: 4, connectTimeout: 5, ...opts });
  pools.push(sql);
  return sql;
};

beforeAll(async () => {
  pair = await startPostgresPair();
}, 120_000);

afterAll(async () => {
  await Promise.all(pools.map((p) => p.end({ timeout: 1 }).catch(() => {})));
  await pair?.stop();
});

describe('a multi-host DATABASE_URL with target_session_attrs=read-write', () => {
  it('migrates (creating the database on the primary) and finds the synchronous standby', async () => {
    expect(await migrate(pair.url('quest_failover'))).toMatchObject({ createdDatabase: true });
    const sql = pool(pair.url('quest_failover'));
    await vi.waitFor(async () => expect(synchronousReplicationProblems(await readReplicationState(sql))).toEqual([]), {
      timeout: 30_000,
      interval: 100,
    });
  });

  it('never hands out a connection to the standby, even when the standby is listed first', async () => {
    // The standby flushed the CREATE DATABASE before the primary answered (synchronous_commit = on)
    // but may replay it later: until it has, a connection to it ends in 3D000 (no such database)
    // before target_session_attrs is even checked, as with libpq. Wait for the replay.
    const standby = pool(pair.nodeUrl('standby', 'postgres'), { max: 1 });
    await vi.waitFor(
      async () => expect(await standby`select 1 from pg_database where datname = 'quest_failover'`).toHaveLength(1),
      { timeout: 30_000, interval: 50 },
    );
    const standbyFirst = `postgres://postgres@127.0.0.1:${pair.standbyPort},127.0.0.1:${pair.primaryPort}/quest_failover?target_session_attrs=read-write`;
    const sql = pool(standbyFirst);
    const rows = await Promise.all(
      Array.from({ length: 12 }, () => sql<{ r: boolean }[]>`select pg_is_in_recovery() as r, pg_sleep(0.02)`),
    );
    expect(rows.map((r) => r[0]!.r)).toEqual(Array(12).fill(false));
    await sql`create table if not exists probe (id serial primary key)`;
  });

  it('survives losing the primary: no query runs on the standby, and after promotion every connection, the session settings and LISTEN are back', async () => {
    const sql = pool(pair.url('quest_failover'), { lockTimeoutMs: 1234 });
    await sql`create table if not exists writes (id int primary key)`;
    const heard: string[] = [];
    let listens = 0;
    await sql.listen(
      'failover_probe',
      (x) => heard.push(x),
      () => listens++,
    );
    const acknowledged: number[] = [];
    for (let i = 1; i <= 50; i++) {
      await sql`insert into writes values (${i})`;
      acknowledged.push(i);
    }
    await pair.killPrimary();

    // No primary: every query settles, as a transient error, and none reaches the standby.
    for (let i = 0; i < 8; i++) {
      const outcome = await sql<{ r: boolean }[]>`select pg_is_in_recovery() as r`.then(
        (rows) => `answered in_recovery=${rows[0]!.r}`,
        (err: { code?: string }) => `${classifyDbError(err)} ${err.code}`,
      );
      expect(outcome).toMatch(
        /^transient (TARGET_SESSION_ATTRS|ECONNREFUSED|CONNECTION_CLOSED|CONNECTION_DESTROYED|ECONNRESET)$/,
      );
    }

    await pair.promoteStandby();
    // Every connection of the pool reconnects to the new primary, with its session settings.
    await vi.waitFor(
      async () => {
        const rows = await Promise.all(
          Array.from(
            { length: 8 },
            () => sql<{ r: boolean; lock: string }[]>`
            select pg_is_in_recovery() as r, current_setting('lock_timeout') as lock, pg_sleep(0.02)`,
          ),
        );
        expect(rows.map((r) => [r[0]!.r, r[0]!.lock])).toEqual(Array(8).fill([false, '1234ms']));
      },
      { timeout: 30_000, interval: 100 },
    );
    // Every write acknowledged before the primary died is on the new primary (synchronous standby).
    const stored = await sql<{ id: number }[]>`select id from writes order by id`;
    expect(stored.map((r) => r.id)).toEqual(acknowledged);
    await sql`insert into writes values (51)`;
    // The listener re-subscribed on the new primary: a notification sent there arrives.
    await vi.waitFor(() => expect(listens).toBeGreaterThanOrEqual(2), { timeout: 30_000, interval: 50 });
    await vi.waitFor(
      async () => {
        await sql.notify('failover_probe', 'after');
        await vi.waitFor(() => expect(heard).toContain('after'), { timeout: 500, interval: 20 });
      },
      { timeout: 15_000, interval: 100 },
    );
  });
});
