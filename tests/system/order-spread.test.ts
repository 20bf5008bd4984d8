import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditViolations, completedJobs, get, post, seed, startSystem, type System } from './harness.ts';

let system: System;

beforeAll(async () => {
  system = await startSystem({ workers: 3, partitions: 12, env: { JOB_RETENTION_SECONDS: '600' } });
});
afterAll(async () => system?.stop());

describe('order and spread across worker processes', () => {
  it('decides each quest in enqueue order, with every process deciding a share', async () => {
    const { apiKey, questIds, accounts } = await seed(system, { quests: 20, total: 1_000_000, accounts: 200 });
    // Wait until the three members see each other (membership TTL + one heartbeat).
    await new Promise((r) => setTimeout(r, 2500));

    let sent = 0;
    const statuses: number[] = [];
    const locations: string[] = [];
    const client = async (c: number) => {
      while (sent < 2000) {
        const i = sent++;
        const questId = questIds[(i * 7 + c) % questIds.length]!;
        const res = await post(
          system,
          `/quests/${questId}`,
          { points: 1 + (i % 5), address: accounts[i % accounts.length]! },
          { 'x-api-key': apiKey },
        );
        statuses.push(res.status);
        if (res.status === 202) locations.push(res.headers.get('location')!);
      }
    };
    await Promise.all(Array.from({ length: 20 }, (_, c) => client(c)));
    // 200, or 202 when the machine is too loaded to decide within the wait; then it must resolve.
    expect(statuses.filter((s) => s !== 200 && s !== 202)).toEqual([]);
    for (const location of locations) {
      const deadline = Date.now() + 15_000;
      let status = 'pending';
      while (status === 'pending' && Date.now() < deadline) {
        status = (await get(system, location, { 'x-api-key': apiKey })).body.allocation.status;
        if (status === 'pending') await new Promise((r) => setTimeout(r, 200));
      }
      expect(status).toBe('completed');
    }

    // Enqueue order: a partition's job ids are handed out by Redis in add order, and items keep
    // their order inside a job. Decision order: payouts.seq (assigned under the quest row lock).
    const jobs = await completedJobs(system);
    const enqueueRank = new Map<string, [number, number]>();
    for (const job of jobs) {
      job.keys.forEach((key, index) => {
        enqueueRank.set(key, [job.id, index]);
      });
    }
    const payouts = await system.db.sql<{ quest_id: number; request_key: string }[]>`
      select quest_id, request_key from payouts where quest_id = any(${questIds}::int[]) order by quest_id, seq`;
    expect(payouts).toHaveLength(2000);
    let violations = 0;
    let previous: { quest: number; rank: [number, number] } | undefined;
    for (const p of payouts) {
      const rank = enqueueRank.get(p.request_key);
      expect(rank, `job for ${p.request_key}`).toBeDefined();
      if (previous && previous.quest === p.quest_id) {
        const [pj, pi] = previous.rank;
        const [j, i] = rank!;
        if (j < pj || (j === pj && i < pi)) violations++;
      }
      previous = { quest: p.quest_id, rank: rank! };
    }
    expect(violations).toBe(0);

    // Spread: every one of the three processes decided part of the work.
    const byWorker = new Map<string, number>();
    for (const job of jobs) byWorker.set(job.processedBy ?? '?', (byWorker.get(job.processedBy ?? '?') ?? 0) + job.keys.length);
    expect(byWorker.size).toBe(3);
    for (const n of byWorker.values()) expect(n).toBeGreaterThan(2000 / 3 / 4);
    expect(await auditViolations(system)).toEqual([]);
  });
});
