import { performance } from 'node:perf_hooks';
import { applyRequests, createSql, insertEvents, type Sql } from '@quest/db';
import { migrate } from '@quest/db/migrate';
import { hashApiKey, newId } from '@quest/domain';
import { startPostgres } from '@quest/testing/postgres';
import { createNumberedAccounts } from '@quest/testing/seed';
import { plainAllocate } from './plain-ledger.ts';
import { clusterCpuSeconds } from './probes/cpu.ts';
import { seedOwner, seedQuests } from './seed.ts';
import { percentile, rng } from './stats.ts';

/**
 * `npm run ledger-cost --workspace @quest/bench`: where a lone allocation's database time goes —
 * the worker's ledger transaction (`applyRequests`, first delivery) against the plain
 * five-statement transaction a user would write (`plain-ledger.ts`), and variants of each that
 * isolate one ingredient: the one-decision trigger on payouts (migration 00010), the outbox's event
 * row, and pipelining. On a private PostgreSQL (nobody else's queries: the CPU of its processes is
 * ours), one connection, sequential transactions over 100 quests and 10,000 accounts; variants run
 * in interleaved rounds, so a drift of the host's speed touches them alike. Reported per
 * transaction: wall p50 / p99, CPU of this Node process (postgres.js, the plan) and of the server.
 */

const ROUNDS = Number(process.env.ROUNDS ?? 5);
const PER_ROUND = Number(process.env.PER_ROUND ?? 400);

interface Item {
  questId: number;
  address: string;
}

interface Variant {
  name: string;
  before?: (sql: Sql) => Promise<unknown>;
  after?: (sql: Sql) => Promise<unknown>;
  run: (sql: Sql, item: Item) => Promise<void>;
}

interface Totals {
  latencies: number[];
  nodeCpu: number;
  pgCpu: number;
  n: number;
}

const completed = (status: string) => {
  if (status !== 'completed') throw new Error(`not completed: ${status}`);
};

/** The plain transaction with its three writes in one statement (data-modifying CTEs). */
const plainOneStatement: Variant['run'] = async (s, i) => {
  await s.begin(async (tx) => {
    await tx`select id from quests where id = ${i.questId} for no key update`;
    const [a] = await tx<{ id: number }[]>`select id from accounts where lower(pass_address) = ${i.address.toLowerCase()}`;
    const now = new Date();
    await tx`
      with paid as (
        insert into payouts (id, quest_id, account_id, amount, request_key, created_at)
        values (${newId('pay', now.getTime())}, ${i.questId}, ${a!.id}, 1, ${newId('alc')}, ${now})
      ), credited as (
        update accounts set balance = balance + 1 where id = ${a!.id}
      )
      update quests set points_remaining = points_remaining - 1 where id = ${i.questId}`;
  });
};

/** The plain transaction with one more statement: the event the ledger writes per credit. */
const plainWithOutboxEvent: Variant['run'] = async (s, i) => {
  await s.begin(async (tx) => {
    const [q] = await tx<{ owner_id: string }[]>`select owner_id from quests where id = ${i.questId} for no key update`;
    const [a] = await tx<{ id: number }[]>`select id from accounts where lower(pass_address) = ${i.address.toLowerCase()}`;
    const now = new Date();
    const id = newId('pay', now.getTime());
    await tx`insert into payouts (id, quest_id, account_id, amount, request_key, created_at)
      values (${id}, ${i.questId}, ${a!.id}, 1, ${newId('alc')}, ${now})`;
    await tx`update accounts set balance = balance + 1 where id = ${a!.id}`;
    await tx`update quests set points_remaining = points_remaining - 1 where id = ${i.questId}`;
    await insertEvents(tx as unknown as Sql, [
      {
        id: newId('evt', now.getTime()),
        ownerId: q!.owner_id,
        type: 'payout.created',
        questId: i.questId,
        allocationId: newId('alc'),
        batchId: null,
        data: { payout: { id, amount: 1, created_at: now.toISOString(), account: { pass: i.address } } },
        createdAt: now,
      },
    ]);
  });
};

/** The transactions compared, in the order they run in each round (ONLY=<n>: just that one). */
function variants(keyHash: Uint8Array): Variant[] {
  const ledger: Variant['run'] = async (s, i) => {
    const [o] = await applyRequests(s, [{ key: newId('alc'), questId: i.questId, points: 1, address: i.address }], {
      firstDelivery: true,
    });
    completed(o!.status);
  };
  const plain: Variant['run'] = async (s, i) => {
    completed((await plainAllocate(s, { keyHash, questId: i.questId, points: 1, address: i.address })).status);
  };
  const noTrigger = {
    before: (s: Sql) => s`alter table payouts disable trigger payouts_one_decision`,
    after: (s: Sql) => s`alter table payouts enable trigger payouts_one_decision`,
  };
  const all: Variant[] = [
    { name: 'ledger transaction (applyRequests, 1 item)', run: ledger },
    { name: 'ledger transaction, no one-decision trigger', ...noTrigger, run: ledger },
    { name: 'plain: 5 statements, each awaited', run: plain },
    { name: 'plain, no one-decision trigger', ...noTrigger, run: plain },
    { name: 'plain, the three writes in one statement (data-modifying CTEs)', run: plainOneStatement },
    { name: 'plain + the outbox event row', run: plainWithOutboxEvent },
  ];
  // ONLY=<n>: just that variant (for a CPU profile of one transaction shape).
  return process.env.ONLY === undefined ? all : [all[Number(process.env.ONLY)]!];
}

/** Warm-up, then `ROUNDS` interleaved rounds of `PER_ROUND` transactions of each variant: wall time and CPU of each. */
async function measureRounds(sql: Sql, postmaster: number, list: Variant[], pick: () => Item): Promise<Totals[]> {
  // Warm every variant's statements up (postgres.js prepares them on first use).
  for (const v of list) {
    await v.before?.(sql);
    for (let n = 0; n < 50; n++) await v.run(sql, pick());
    await v.after?.(sql);
  }
  const totals = list.map((): Totals => ({ latencies: [], nodeCpu: 0, pgCpu: 0, n: 0 }));
  for (let round = 0; round < ROUNDS; round++) {
    for (const [k, v] of list.entries()) {
      await v.before?.(sql);
      const t = totals[k]!;
      const pg0 = clusterCpuSeconds(postmaster);
      const cpu0 = process.cpuUsage();
      for (let n = 0; n < PER_ROUND; n++) {
        const t0 = performance.now();
        await v.run(sql, pick());
        t.latencies.push(performance.now() - t0);
      }
      const cpu = process.cpuUsage(cpu0);
      t.nodeCpu += (cpu.user + cpu.system) / 1e6;
      t.pgCpu += clusterCpuSeconds(postmaster) - pg0;
      t.n += PER_ROUND;
      await v.after?.(sql);
    }
  }
  return totals;
}

function printTable(list: Variant[], totals: Totals[]): void {
  console.log(`${ROUNDS} rounds × ${PER_ROUND} transactions per variant, interleaved; one connection, private PostgreSQL 15`);
  console.log('| transaction | wall p50 | wall p99 | Node CPU / tx | PostgreSQL CPU / tx | CPU / tx |');
  console.log('|---|---:|---:|---:|---:|---:|');
  for (const [k, v] of list.entries()) {
    const t = totals[k]!;
    const sorted = [...t.latencies].sort((a, b) => a - b);
    const us = (s: number) => `${Math.round((s * 1e6) / t.n)} µs`;
    console.log(
      `| ${v.name} | ${percentile(sorted, 50).toFixed(2)} ms | ${percentile(sorted, 99).toFixed(2)} ms | ${us(t.nodeCpu)} | ${us(t.pgCpu)} | ${us(t.nodeCpu + t.pgCpu)} |`,
    );
  }
}

async function main() {
  const pg = await startPostgres();
  const url = pg.url('qr_ledger_cost');
  try {
    await migrate(url);
    const sql = createSql(url, { max: 1, applicationName: 'quest-ledger-cost' });
    const owner = await seedOwner(sql);
    const keyHash = hashApiKey(owner.apiKey);
    const quests = await seedQuests(sql, owner.ownerId, 100, 'cost');
    const accounts = await createNumberedAccounts(sql, 10_000);
    await sql`vacuum analyze`;
    const list = variants(keyHash);
    const r = rng(11);
    const pick = () => ({
      questId: quests[Math.floor(r() * quests.length)]!,
      address: accounts[Math.floor(r() * accounts.length)]!,
    });
    printTable(list, await measureRounds(sql, pg.pid()!, list, pick));
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
