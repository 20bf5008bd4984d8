import { createSql } from '@quest/db';
import { seedOwner, seedQuests } from './seed.ts';
import { testAddress } from '@quest/testing/seed';
const sql = createSql(process.env.DATABASE_URL!, { max: 2 });
const owner = await seedOwner(sql);
const quests = await seedQuests(sql, owner.ownerId, 50, 'one');
const base = process.env.BASE!;
const one = async (q: number, i: number) => {
  const t = performance.now();
  const r = await fetch(`${base}/quests/${q}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': owner.apiKey },
    body: JSON.stringify({ points: 1, address: testAddress(1 + (i % 1000)) }),
  });
  await r.text();
  return performance.now() - t;
};
for (let i = 0; i < 20; i++) await one(quests[0]!, i);
const same: number[] = [];
for (let i = 0; i < 100; i++) same.push(await one(quests[0]!, i));
const diff: number[] = [];
for (let i = 0; i < 50; i++) diff.push(await one(quests[i]!, i));
const diff2: number[] = [];
for (let i = 0; i < 50; i++) diff2.push(await one(quests[i]!, i));
const p = (a: number[]) => {
  const s = [...a].sort((x, y) => x - y);
  return `p50 ${s[Math.floor(s.length / 2)]!.toFixed(1)} max ${s.at(-1)!.toFixed(1)}`;
};
console.log('same quest', p(same));
console.log('new quests', p(diff));
console.log('same 50 quests again', p(diff2));
await sql.end();
