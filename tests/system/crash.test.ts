import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditViolations, get, post, seed, startSystem, type System } from './harness.ts';

let system: System;

beforeAll(async () => {
  // A short wait, so requests caught by the crash are answered 202 and followed up later.
  system = await startSystem({ workers: 2, partitions: 8, env: { ALLOCATION_WAIT_MS: '3000' } });
});
afterAll(async () => system?.stop());

describe('a worker killed mid-stream', () => {
  it('loses and doubles nothing; survivors take over its partitions within 10 s', async () => {
    const { apiKey, questIds, accounts } = await seed(system, { quests: 16, total: 1_000_000, accounts: 300 });
    await new Promise((r) => setTimeout(r, 2500));
    const answers: { status: number; body: any; headers: Headers; questId: number }[] = [];
    let sent = 0;
    let killedAt = 0;
    const client = async (c: number) => {
      while (sent < 2000) {
        const i = sent++;
        if (i === 600) {
          killedAt = Date.now();
          system.workers[0]!.child.kill('SIGKILL');
          void system.startWorker();
        }
        const questId = questIds[(i + c) % questIds.length]!;
        const res = await post(
          system,
          `/quests/${questId}`,
          { points: 3, address: accounts[i % accounts.length]! },
          { 'x-api-key': apiKey },
        );
        answers.push({ ...res, questId });
      }
    };
    await Promise.all(Array.from({ length: 16 }, (_, c) => client(c)));
    expect(killedAt).toBeGreaterThan(0);
    // Every answer is a 200 with a payout or a 202 with a status URL; nothing else.
    const unexpected = answers.filter((a) => a.status !== 200 && a.status !== 202);
    expect(unexpected.map((a) => [a.status, a.body?.code])).toEqual([]);

    // Each 202 resolves to exactly one outcome once the survivors have taken over.
    const pending = answers.filter((a) => a.status === 202);
    const deadline = Date.now() + 20_000;
    const resolved: any[] = [];
    for (const a of pending) {
      for (;;) {
        const status = await get(system, a.headers.get('location')!, { 'x-api-key': apiKey });
        expect(status.status).toBe(200);
        if (status.body.allocation.status !== 'pending') {
          resolved.push(status.body.allocation);
          break;
        }
        expect(Date.now(), 'a 202 never resolved').toBeLessThan(deadline);
        await new Promise((r) => setTimeout(r, 200));
      }
    }
    expect(resolved.every((r) => r.status === 'completed')).toBe(true);

    const ids = [...answers.filter((a) => a.status === 200).map((a) => a.body.payout.id), ...resolved.map((r) => r.payout.id)];
    expect(new Set(ids).size).toBe(2000);
    const [{ n, dup }] = (await system.db.sql`
      select count(*)::int8 as n, (count(*) - count(distinct (quest_id, request_key)))::int8 as dup
      from payouts where quest_id = any(${questIds}::int[])`) as unknown as [{ n: number; dup: number }];
    expect({ n, dup }).toEqual({ n: 2000, dup: 0 });
    expect(await auditViolations(system)).toEqual([]);

    // Take-over time: the last payout of the run must not be later than 10 s after the kill plus the
    // time the clients kept sending; measure the largest silence in decisions after the kill.
    const times = await system.db.sql<{ t: Date }[]>`
      select created_at as t from payouts where quest_id = any(${questIds}::int[]) and created_at >= ${new Date(killedAt)} order by created_at`;
    let gap = 0;
    let last = killedAt;
    for (const { t } of times) {
      gap = Math.max(gap, t.getTime() - last);
      last = t.getTime();
    }
    expect(gap).toBeLessThan(10_000);
  });
});
