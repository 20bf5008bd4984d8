import { applyRequests, createSql, type LedgerItem } from '@quest/db';
import { migrate } from '@quest/db/migrate';
import { newId, partitionOf } from '@quest/domain';
import { startPostgres } from '@quest/testing/postgres';
import { createNumberedAccounts } from '@quest/testing/seed';
import { directBatches } from './direct.ts';
import { clusterCpuSeconds } from './probes/cpu.ts';
import { seedOwner, seedQuests } from './seed.ts';
import { rng } from './stats.ts';

/**
 * `npm run pg-cost --workspace @quest/bench`: what one allocation costs PostgreSQL, measured on a
 * private server (initdb in a temp dir, a free port; nobody else's queries) so the CPU of every
 * one of its processes and its WAL position are ours alone. The ledger transaction the worker runs
 * (`applyRequests`, first delivery) is applied sequentially on one connection with k items per
 * job (k = 1, 2, 8, 32, 128 — what coalescing makes of concurrent requests), items of one job on
 * the quests of one partition (1,000 quests, 16 partitions, 10,000 accounts); then batch credits
 * (`applyBatchChunk`, chunks of 5,000). Reported per allocation: PostgreSQL CPU (all its
 * processes: backend, WAL writer, checkpointer…) and WAL bytes, and per job: wall time.
 * The server runs with fsync and full_page_writes off (it is a throwaway on a shared disk): WAL
 * volume is that without full-page images, and commit latency is not the disk's.
 */

const PARTITIONS = 16;

async function main() {
  const pg = await startPostgres();
  const url = pg.url('qr_pg_cost');
  try {
    await migrate(url);
    const sql = createSql(url, { max: 1, applicationName: 'quest-pg-cost' });
    const owner = await seedOwner(sql);
    const quests = await seedQuests(sql, owner.ownerId, 1000, 'cost');
    const accounts = await createNumberedAccounts(sql, 10_000);
    const byPartition = Array.from({ length: PARTITIONS }, (_, p) => quests.filter((q) => partitionOf(q, PARTITIONS) === p));
    await sql`vacuum analyze`;
    await sql`checkpoint`;
    const postmaster = pg.pid()!;
    const wal = async () => (await sql<{ lsn: string }[]>`select pg_current_wal_lsn()::text as lsn`)[0]!.lsn;
    const walDiff = async (from: string) =>
      Number((await sql<{ d: string }[]>`select pg_wal_lsn_diff(pg_current_wal_lsn(), ${from}::pg_lsn)::text as d`)[0]!.d);
    const r = rng(7);
    const rows: string[] = [];
    const measure = async (label: string, items: number, jobs: number, fn: () => Promise<void>) => {
      await sql`checkpoint`;
      const lsn = await wal();
      const cpu0 = clusterCpuSeconds(postmaster);
      const t0 = performance.now();
      await fn();
      const ms = performance.now() - t0;
      const cpu = clusterCpuSeconds(postmaster) - cpu0;
      const bytes = await walDiff(lsn);
      const line = `| ${label} | ${items} | ${jobs} | ${Math.round((cpu * 1e6) / items)} µs | ${Math.round(bytes / items)} B | ${(ms / jobs).toFixed(2)} ms | ${Math.round((items * 1000) / ms)}/s |`;
      rows.push(line);
      console.log(line);
    };
    console.log(
      '| job shape | allocations | transactions | PostgreSQL CPU / allocation | WAL / allocation | wall / transaction | allocations/s (1 connection) |',
    );
    console.log('|---|---:|---:|---:|---:|---:|---:|');
    for (const k of [1, 2, 8, 32, 128]) {
      const total = k <= 2 ? 4000 : 8000;
      const jobs = Math.ceil(total / k);
      await measure(`applyRequests, ${k} item${k > 1 ? 's' : ''}/job`, jobs * k, jobs, async () => {
        for (let j = 0; j < jobs; j++) {
          const pool = byPartition[j % PARTITIONS]!;
          const items: LedgerItem[] = Array.from({ length: k }, () => ({
            key: newId('alc'),
            questId: pool[Math.floor(r() * pool.length)]!,
            points: 1,
            address: accounts[Math.floor(r() * accounts.length)]!,
          }));
          const out = await applyRequests(sql, items, { firstDelivery: true });
          if (out.some((o) => o.status !== 'completed')) throw new Error(`not completed: ${JSON.stringify(out[0])}`);
        }
      });
    }
    const [batchQuest] = await seedQuests(sql, owner.ownerId, 1, 'cost-batch');
    const batchAccounts = await createNumberedAccounts(sql, 20_000);
    await measure('batch credits, chunks of 5,000', 20_000, 4, async () => {
      const res = await directBatches(sql, {
        questId: batchQuest!,
        ownerId: owner.ownerId,
        addresses: batchAccounts,
        batchSize: 10_000,
        chunkSize: 5000,
      });
      if (res.completed !== 20_000) throw new Error(`batch: ${res.completed} completed, ${res.sampleErrors[0] ?? ''}`);
    });
    await sql.end({ timeout: 2 });
  } finally {
    await pg.stop();
  }
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
