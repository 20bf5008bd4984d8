import { parseArgs } from 'node:util';
import { createSql } from '@quest/db';
import { migrate } from '@quest/db/migrate';
import { pgBackRestUnavailable, startArchivedPostgres } from '@quest/testing/pgbackrest';
import { auditViolations, createAccounts, createOwner, createQuests } from '@quest/testing/seed';

/**
 * The RTO of a restore here (docs/operations.md, "Backups and point-in-time recovery"):
 * `npx tsx tools/chaos/src/restore-rto.ts [--payouts 1000000] [--after 20000]`. A private PostgreSQL
 * (fsync on) archived by pgBackRest gets a ledger of N payouts over 1,000 accounts, a full backup,
 * then `--after` more payouts committed one transaction per 100 (WAL the restore must replay); the
 * data directory is destroyed and restored to the latest point. Prints the backup's time and size,
 * the restore's time (pgBackRest restore + WAL replay + promotion) and checks the restored ledger.
 */

const { values } = parseArgs({
  options: { payouts: { type: 'string', default: '1000000' }, after: { type: 'string', default: '20000' } },
});
const N = Number(values.payouts);
const AFTER = Number(values.after);
const why = pgBackRestUnavailable();
if (why) {
  console.error(`cannot measure: ${why}`);
  process.exit(2);
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const pg = await startArchivedPostgres({ settings: ['fsync=on', 'shared_buffers=256MB', 'max_wal_size=4GB'] });
try {
  const url = pg.url('quest_rto');
  await migrate(url);
  let sql = createSql(url, { max: 2 });
  const owner = await createOwner(sql);
  const [questId] = await createQuests(sql, 1, { ownerId: owner.id, totalPoints: 9_000_000_000_000 });
  await createAccounts(sql, 1000);
  const credit = async (from: number, count: number) => {
    await sql`
      with ins as (
        insert into payouts (id, quest_id, account_id, amount, request_key, created_at)
        select 'pay_rto' || g, ${questId!}, a.id, 1 + g % 5, 'alc_rto' || g, now()
        from generate_series(${from}::bigint, ${from + count - 1}::bigint) g
        join (select id, row_number() over (order by id) - 1 as n from accounts) a on a.n = g % 1000
        returning account_id, amount)
      , per_account as (select account_id, sum(amount) as total from ins group by account_id)
      , acc as (update accounts set balance = balance + p.total from per_account p where accounts.id = p.account_id)
      update quests set points_remaining = points_remaining - (select sum(total) from per_account) where id = ${questId!}`;
  };
  let t = performance.now();
  for (let from = 0; from < N; from += 100_000) await credit(from, Math.min(100_000, N - from));
  console.error(`seeded ${N} payouts in ${seconds(performance.now() - t)}`);
  t = performance.now();
  await pg.backup('full');
  const backupMs = performance.now() - t;
  const [info] = JSON.parse(await pg.pgbackrest(['info', '--output=json'])) as {
    backup: { info: { size: number; repository: { delta: number } } }[];
  }[];
  const last = info!.backup.at(-1)!.info;
  for (let from = N; from < N + AFTER; from += 100) await credit(from, 100);
  const [{ size }] = (await sql<
    { size: string }[]
  >`select pg_size_pretty(pg_database_size(current_database())) as size`) as unknown as [{ size: string }];
  await pg.pgbackrest(['check']);
  await sql.end({ timeout: 1 });
  await pg.destroyPrimary();
  const restoreMs = await pg.restore({ to: 'latest' });
  sql = createSql(url, { max: 2 });
  const [{ count }] = (await sql<{ count: string }[]>`select count(*) from payouts`) as unknown as [{ count: string }];
  const audit = await auditViolations(sql);
  await sql.end({ timeout: 1 });
  console.log(
    [
      `database ${size}, ${N} payouts in the base backup + ${AFTER} committed after it (${AFTER / 100} transactions)`,
      `full backup: ${seconds(backupMs)}, ${(last.size / 1e6).toFixed(0)} MB, ${(last.repository.delta / 1e6).toFixed(0)} MB in the repository (lz4)`,
      `restore to the latest point (pgbackrest restore + WAL replay + promotion): ${seconds(restoreMs)}`,
      `restored: ${count} payouts, audit ${audit.length === 0 ? 'clean' : `${audit.length} violations`}`,
    ].join('\n'),
  );
  if (Number(count) !== N + AFTER || audit.length > 0) process.exitCode = 1;
} finally {
  await pg.stop();
}
