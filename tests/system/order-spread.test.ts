import { describe, expect } from 'vitest';
import { partitionOf } from '@quest/domain';
import { auditViolations, completedJobs, createAccounts, createQuests, post, settle, systemTest, workerId } from '@quest/testing';

const PARTITIONS = 12;
// Three workers: the system is handed over once the pool has settled on all three (4 partitions each).
const test = systemTest({ workers: 3, partitions: PARTITIONS, env: { JOB_RETENTION_SECONDS: '600' } });

const REQUESTS = 2000;

describe('order and spread across worker processes', () => {
  test('decides each quest in enqueue order, with every process deciding a share', async ({ system, database, owner }) => {
    const questIds = await createQuests(database.sql, 20, { ownerId: owner.id, totalPoints: 1_000_000 });
    const accounts = await createAccounts(database.sql, 200);
    // Every partition has quests, so every process owns partitions with work.
    expect(new Set(questIds.map((q) => partitionOf(q, PARTITIONS))).size).toBe(PARTITIONS);

    let sent = 0;
    const statuses: number[] = [];
    const locations: string[] = [];
    const client = async () => {
      while (sent < REQUESTS) {
        const i = sent++;
        // Every 20 consecutive requests cover every quest (7 and 20 are coprime), interleaved.
        const questId = questIds[(i * 7) % questIds.length]!;
        const res = await post(
          system,
          `/quests/${questId}`,
          { points: 1 + (i % 5), address: accounts[i % accounts.length]! },
          { 'x-api-key': owner.apiKey },
        );
        statuses.push(res.status);
        if (res.status === 202) locations.push(res.headers.get('location')!);
      }
    };
    await Promise.all(Array.from({ length: 20 }, client));
    // 200, or 202 when the machine is too loaded to decide within the wait; then it must resolve.
    expect(statuses.filter((s) => s !== 200 && s !== 202)).toEqual([]);
    for (const location of locations) {
      expect((await settle(system, location, owner.apiKey)).allocation.status).toBe('completed');
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
    const payouts = await database.sql<{ quest_id: number; request_key: string }[]>`
      select quest_id, request_key from payouts where quest_id = any(${questIds}::int[]) order by quest_id, seq`;
    expect(payouts).toHaveLength(REQUESTS);
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

    // Spread: the work was decided by these three processes, and every one of them decided part of it.
    const decidedBy = new Map(system.workers.map((w) => [workerId(w), 0]));
    for (const job of jobs) decidedBy.set(job.processedBy ?? '?', (decidedBy.get(job.processedBy ?? '?') ?? 0) + job.keys.length);
    expect(decidedBy.size, `items decided per process: ${JSON.stringify([...decidedBy])}`).toBe(3);
    for (const [id, n] of decidedBy) expect(n, `items decided by ${id}`).toBeGreaterThan(0);
    expect(await auditViolations(database.sql)).toEqual([]);
  });
});
