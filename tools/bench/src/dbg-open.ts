import { createSql } from '@quest/db';
import { createNumberedAccounts } from '@quest/testing/seed';
import { openLoopPool, runOpenLoop } from './open-loop.ts';
import { seedOwner, seedQuests } from './seed.ts';
import { rng } from './stats.ts';
const sql = createSql(process.env.DATABASE_URL!, { max: 2 });
const owner = await seedOwner(sql);
const quests = await seedQuests(sql, owner.ownerId, 1000, 'dbg');
const accounts = await createNumberedAccounts(sql, 10_000);
const r = rng(1);
const pick = () => ({ questId: quests[Math.floor(r() * quests.length)]!, address: accounts[Math.floor(r() * accounts.length)]! });
const baseUrl = process.env.BASE!;
const pool = openLoopPool(baseUrl, 256);
for (const rate of (process.env.RATES ?? '50,100,200,200,400').split(',').map(Number)) {
  const l = await runOpenLoop({ baseUrl, apiKey: owner.apiKey, rate, durationS: 3, connections: 256, pick, pool });
  console.log(
    rate,
    l.ok200,
    l.due,
    'p50',
    l.latency.p50.toFixed(1),
    'p90',
    l.latency.p90.toFixed(1),
    'p99',
    l.latency.p99.toFixed(1),
    l.otherStatus,
    l.accepted202,
  );
}
await pool.close();
await sql.end();
