import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { address, auditViolations, completedJobs, get, post, seed, startSystem, type System } from './harness.ts';

let system: System;
let owner: Awaited<ReturnType<typeof seed>>;

beforeAll(async () => {
  system = await startSystem({ workers: 1, partitions: 4, env: { JOB_RETENTION_SECONDS: '600', BATCH_MAX_ITEMS: '10000' } });
  owner = await seed(system, { quests: 4, total: 10_000_000, accounts: 10_000 });
});
afterAll(async () => system?.stop());

const auth = () => ({ 'x-api-key': owner.apiKey });
async function newQuest(total: number): Promise<number> {
  const [{ id }] = (await system.db.sql`
    insert into quests (owner_id, name, start_at, end_at, total_points, points_remaining)
    values (${owner.ownerId}, 'batch', now() - interval '1 hour', now() + interval '1 day', ${total}, ${total}) returning id`) as unknown as [
    { id: number },
  ];
  return id;
}
const batch = (questId: number, allocations: unknown[], headers: Record<string, string> = auth()) =>
  post(system, `/quests/${questId}/batches`, { allocations }, headers);

describe('POST /quests/:questId/batches', () => {
  it('decides items in order, rejecting an over-budget item on its own while later smaller ones succeed', async () => {
    const q = await newQuest(100);
    const items = [30, 80, 50, 20, 1].map((points, i) => ({ address: owner.accounts[i]!.toLowerCase(), points }));
    const res = await batch(q, items);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const b = res.body.batch;
    expect(b).toMatchObject({
      id: expect.stringMatching(/^bat_/),
      status: 'completed',
      total: 5,
      processed: 5,
      succeeded: 3,
      failed: 2,
    });
    expect(b.results.map((r: any) => (r.status === 'completed' ? r.payout.amount : r.error.code))).toEqual([
      30,
      'INSUFFICIENT_POINTS',
      50,
      20,
      'INSUFFICIENT_POINTS',
    ]);
    expect(b.results.map((r: any) => r.index)).toEqual([0, 1, 2, 3, 4]);
    expect(b.results[0].payout.account.pass).toBe(owner.accounts[0]);
    const [row] = await system.db.sql<{ points_remaining: number }[]>`select points_remaining from quests where id = ${q}`;
    expect(row!.points_remaining).toBe(0);
    expect(await auditViolations(system)).toEqual([]);
  });

  it('reports unknown accounts per item', async () => {
    const q = await newQuest(1000);
    const res = await batch(q, [
      { address: owner.accounts[0]!, points: 1 },
      { address: address(0xabcdef01), points: 1 },
    ]);
    expect(res.body.batch.results[1]).toEqual({
      index: 1,
      status: 'rejected',
      address: address(0xabcdef01),
      points: 1,
      error: { code: 'ACCOUNT_NOT_FOUND', message: expect.any(String) },
    });
  });

  it('rejects a malformed item with a 400 naming its index, crediting nothing', async () => {
    const q = await newQuest(1000);
    const items = Array.from({ length: 50 }, (_, i) => ({ address: owner.accounts[i]!, points: 1 }));
    items[37] = { address: '0x123', points: 1 };
    const res = await batch(q, items);
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('VALIDATION_FAILED');
    expect(JSON.stringify(res.body)).toContain('37');
    const bad = await batch(q, [{ address: owner.accounts[0]!, points: 0 }]);
    expect(bad.status).toBe(400);
    expect((await batch(q, [])).status).toBe(400);
    expect(
      (
        await post(
          system,
          `/quests/${q}/batches`,
          { allocations: [{ address: owner.accounts[0]!, points: 1 }], extra: 1 },
          auth(),
        )
      ).status,
    ).toBe(400);
    const paid = await system.db.sql`select 1 from payouts where quest_id = ${q}`;
    expect(paid).toHaveLength(0);
    expect(await system.db.sql`select 1 from batches where quest_id = ${q}`).toHaveLength(0);
  });

  it('takes 10,000 items and refuses 10,001 with BATCH_TOO_LARGE', async () => {
    const q = await newQuest(10_000_000);
    const items = owner.accounts.map((a, i) => ({ address: a, points: 1 + (i % 3) }));
    expect(items).toHaveLength(10_000);
    const over = await batch(q, [...items, { address: owner.accounts[0]!, points: 1 }]);
    expect(over.status).toBe(400);
    expect(over.body.code).toBe('BATCH_TOO_LARGE');
    const res = await batch(q, items);
    expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBe(200);
    expect(res.body.batch).toMatchObject({ status: 'completed', total: 10_000, succeeded: 10_000, failed: 0 });
    expect(res.body.batch.results).toHaveLength(10_000);
    const [{ n, s }] = (await system.db
      .sql`select count(*)::int8 as n, sum(amount)::int8 as s from payouts where quest_id = ${q}`) as unknown as [
      { n: number; s: number },
    ];
    expect(n).toBe(10_000);
    expect(s).toBe(items.reduce((t, i) => t + i.points, 0));

    // Status with pagination.
    const id = res.body.batch.id;
    const page = await get(system, `/quests/${q}/batches/${id}?limit=3&offset=9998`, auth());
    expect(page.status).toBe(200);
    expect(page.body.batch).toMatchObject({ id, status: 'completed', total: 10_000, processed: 10_000 });
    expect(page.body.batch.results.map((r: any) => r.index)).toEqual([9998, 9999]);
    expect((await get(system, `/quests/${q}/batches/bat_unknown`, auth())).body.code).toBe('BATCH_NOT_FOUND');
    expect((await get(system, `/quests/${q}/batches/${id}`)).status).toBe(401);
  });

  it('with an Idempotency-Key: a repeat credits nothing twice; different items → IDEMPOTENCY_KEY_REUSED', async () => {
    const q = await newQuest(1000);
    const headers = { ...auth(), 'idempotency-key': 'event-42' };
    const items = Array.from({ length: 20 }, (_, i) => ({ address: owner.accounts[i]!, points: 5 }));
    const [a, b] = await Promise.all([batch(q, items, headers), batch(q, items, headers)]);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(a.body.batch.id).toBe(b.body.batch.id);
    expect(b.body.batch.results).toEqual(a.body.batch.results);
    const c = await batch(q, items, headers);
    expect(c.body.batch.results).toEqual(a.body.batch.results);
    const d = await batch(q, items.slice(1), headers);
    expect(d.status).toBe(400);
    expect(d.body.code).toBe('IDEMPOTENCY_KEY_REUSED');
    const [{ n }] = (await system.db.sql`select count(*)::int8 as n from payouts where quest_id = ${q}`) as unknown as [
      { n: number },
    ];
    expect(n).toBe(20);
  });

  it("takes its place in the quest's order like one request, interleaved with single allocations", async () => {
    const q = await newQuest(10_000_000);
    const requests: Promise<{ status: number }>[] = [];
    for (let round = 0; round < 10; round++) {
      for (let k = 0; k < 5; k++)
        requests.push(post(system, `/quests/${q}`, { points: 1, address: owner.accounts[round * 5 + k]! }, auth()));
      requests.push(
        batch(
          q,
          Array.from({ length: 100 }, (_, i) => ({ address: owner.accounts[1000 + round * 100 + i]!, points: 2 })),
        ),
      );
    }
    const answers = await Promise.all(requests);
    expect(answers.every((a) => a.status === 200)).toBe(true);

    // Enqueue order: (job id, position in job); a batch job's items are its positions. Decision
    // order: payouts.seq.
    const jobs = await completedJobs(system);
    const rank = new Map<string, [number, number]>();
    for (const job of jobs) {
      job.keys.forEach((key, i) => {
        rank.set(key, [job.id, i]);
      });
    }
    const batchJobIds = new Map<string, number>();
    for (const job of jobs) if (job.batchId) batchJobIds.set(job.batchId, job.id);
    const payouts = await system.db.sql<{ request_key: string; batch_id: string | null; item_index: number | null }[]>`
      select request_key, batch_id, item_index from payouts where quest_id = ${q} order by seq`;
    expect(payouts).toHaveLength(50 + 1000);
    const ranks: [number, number][] = payouts.map((p) =>
      p.batch_id ? [batchJobIds.get(p.batch_id)!, p.item_index!] : rank.get(p.request_key)!,
    );
    for (let i = 1; i < ranks.length; i++) {
      const [pj, pi] = ranks[i - 1]!;
      const [j, k] = ranks[i]!;
      expect(j > pj || (j === pj && k > pi), `payout ${i} decided out of enqueue order`).toBe(true);
    }
    // A batch's items are decided back to back: no single allocation lands in the middle of one.
    const runs = payouts.map((p) => p.batch_id ?? '-').filter((b, i, all) => b !== '-' && b !== all[i - 1]);
    expect(new Set(runs).size).toBe(runs.length);
    expect(await auditViolations(system)).toEqual([]);
  });
});

describe('a worker killed mid-batch', () => {
  it('resumes where the last committed chunk ended, losing and doubling no item', async () => {
    const q = await newQuest(10_000_000);
    // Small chunks so the kill lands mid-batch.
    await system.workers[0]!.stop('SIGTERM');
    system.workers.length = 0;
    const slow = await system.startWorker({ BATCH_CHUNK_SIZE: '200' });
    const items = owner.accounts.map((a) => ({ address: a, points: 3 }));
    const pending = batch(q, items, { ...auth(), 'idempotency-key': 'crash-batch' });
    let processed = 0;
    const deadline = Date.now() + 20_000;
    while (processed === 0 && Date.now() < deadline) {
      const [row] = await system.db.sql<{ processed: number }[]>`select processed from batches where quest_id = ${q}`;
      processed = row?.processed ?? 0;
      await new Promise((r) => setTimeout(r, 5));
    }
    expect(processed).toBeGreaterThan(0);
    slow.child.kill('SIGKILL');
    await slow.exited;
    const [mid] = await system.db.sql<{ processed: number }[]>`select processed from batches where quest_id = ${q}`;
    expect(mid!.processed).toBeLessThan(10_000);
    await system.startWorker({ BATCH_CHUNK_SIZE: '2000' });
    const res = await pending;
    expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBe(200);
    expect(res.body.batch).toMatchObject({ status: 'completed', total: 10_000, succeeded: 10_000, failed: 0 });
    const [{ n, distinct }] = (await system.db.sql`
      select count(*)::int8 as n, count(distinct item_index)::int8 as distinct from payouts where quest_id = ${q}`) as unknown as [
      { n: number; distinct: number },
    ];
    expect({ n, distinct }).toEqual({ n: 10_000, distinct: 10_000 });
    expect(await auditViolations(system)).toEqual([]);
  });
});
