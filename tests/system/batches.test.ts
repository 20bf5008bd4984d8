import { describe, expect, vi } from 'vitest';
import {
  auditViolations,
  completedJobs,
  createAccounts,
  get,
  liveWorkers,
  post,
  type System,
  settle,
  systemTest,
  testAddress,
} from '@quest/testing';

const BATCH_MAX_ITEMS = 10_000;
const test = systemTest({
  workers: 1,
  partitions: 4,
  env: { JOB_RETENTION_SECONDS: '600', BATCH_MAX_ITEMS: String(BATCH_MAX_ITEMS) },
});

const batch = (system: System, questId: number, allocations: unknown[], headers: Record<string, string>) =>
  post(system, `/quests/${questId}/batches`, { allocations }, headers);

/** The final view of a batch: the 200's body, or, when answered 202, its status once decided. */
async function finalBatch(system: System, res: { status: number; body: any; headers: Headers }, apiKey: string) {
  if (res.status !== 202) return res.body.batch;
  return (await settle(system, res.headers.get('location')!, apiKey, 60_000)).batch;
}

async function payoutTotals(system: System, questId: number) {
  const [row] = await system.db.sql<{ n: number; s: number; distinct: number }[]>`
    select count(*)::int as n, coalesce(sum(amount), 0)::int as s, count(distinct item_index)::int as distinct
    from payouts where quest_id = ${questId}`;
  return row!;
}

describe('POST /quests/:questId/batches', () => {
  test('decides items in order, rejecting an over-budget item on its own while later smaller ones succeed', async ({
    system,
    owner,
    makeQuest,
    accounts,
  }) => {
    const q = await makeQuest({ totalPoints: 100 });
    const items = [30, 80, 50, 20, 1].map((points, i) => ({ address: accounts[i]!.toLowerCase(), points }));
    const res = await batch(system, q, items, { 'x-api-key': owner.apiKey });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.headers.get('idempotent-replayed')).toBeNull();
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
    expect(b.results[0].payout.account.pass).toBe(accounts[0]);
    const [row] = await system.db.sql<{ points_remaining: number }[]>`select points_remaining from quests where id = ${q}`;
    expect(row!.points_remaining).toBe(0);
    expect(await auditViolations(system.db.sql)).toEqual([]);

    // Each item is an allocation of its own on the status route: completed and rejected alike.
    const item = async (i: number) =>
      (await get(system, `/quests/${q}/allocations/${b.id}:${i}`, { 'x-api-key': owner.apiKey })).body.allocation;
    expect(await item(0)).toEqual({
      id: `${b.id}:0`,
      status: 'completed',
      payout: b.results[0].payout,
      updated_at: expect.any(String),
    });
    expect(await item(1)).toMatchObject({ id: `${b.id}:1`, status: 'rejected', error: { code: 'INSUFFICIENT_POINTS' } });
    expect((await get(system, `/quests/${q}/allocations/${b.id}:5`, { 'x-api-key': owner.apiKey })).status).toBe(404);
  });

  test('reports unknown accounts per item', async ({ system, owner, quest, accounts }) => {
    const unknown = testAddress(0xabcdef01);
    const res = await batch(
      system,
      quest,
      [
        { address: accounts[0]!, points: 1 },
        { address: unknown, points: 1 },
      ],
      { 'x-api-key': owner.apiKey },
    );
    expect(res.status).toBe(200);
    expect(res.body.batch.results[1]).toEqual({
      index: 1,
      status: 'rejected',
      address: unknown,
      points: 1,
      error: { code: 'ACCOUNT_NOT_FOUND', message: expect.any(String) },
    });
  });

  test('rejects a malformed item with a 400 naming its index, crediting nothing', async ({ system, database, owner, quest }) => {
    const auth = { 'x-api-key': owner.apiKey };
    const accounts = await createAccounts(database.sql, 50);
    const items = accounts.map((address) => ({ address, points: 1 }));
    items[37] = { address: '0x123' as `0x${string}`, points: 1 };
    const res = await batch(system, quest, items, auth);
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('VALIDATION_FAILED');
    expect(JSON.stringify(res.body)).toContain('37');
    const bad = await batch(system, quest, [{ address: accounts[0]!, points: 0 }], auth);
    expect(bad.status).toBe(400);
    expect((await batch(system, quest, [], auth)).status).toBe(400);
    const extra = await post(
      system,
      `/quests/${quest}/batches`,
      { allocations: [{ address: accounts[0]!, points: 1 }], extra: 1 },
      auth,
    );
    expect(extra.status).toBe(400);
    expect(await system.db.sql`select 1 from payouts where quest_id = ${quest}`).toHaveLength(0);
    expect(await system.db.sql`select 1 from batches where quest_id = ${quest}`).toHaveLength(0);
  });

  test(`takes ${BATCH_MAX_ITEMS.toLocaleString('en')} items and refuses one more with BATCH_TOO_LARGE`, async ({
    system,
    database,
    owner,
    makeQuest,
  }) => {
    const auth = { 'x-api-key': owner.apiKey };
    const q = await makeQuest({ totalPoints: 10_000_000 });
    const accounts = await createAccounts(database.sql, BATCH_MAX_ITEMS);
    const items = accounts.map((address, i) => ({ address, points: 1 + (i % 3) }));
    const over = await batch(system, q, [...items, { address: accounts[0]!, points: 1 }], auth);
    expect(over.status).toBe(400);
    expect(over.body.code).toBe('BATCH_TOO_LARGE');
    const res = await batch(system, q, items, auth);
    expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBe(200);
    expect(res.body.batch).toMatchObject({ status: 'completed', total: items.length, succeeded: items.length, failed: 0 });
    expect(res.body.batch.results).toHaveLength(items.length);
    const { n, s } = await payoutTotals(system, q);
    expect({ n, s }).toEqual({ n: items.length, s: items.reduce((t, i) => t + i.points, 0) });

    // Status with pagination: the last page holds what is left after the offset.
    const id = res.body.batch.id;
    const page = await get(system, `/quests/${q}/batches/${id}?limit=3&offset=${items.length - 2}`, auth);
    expect(page.status).toBe(200);
    expect(page.body.batch).toMatchObject({ id, status: 'completed', total: items.length, processed: items.length });
    expect(page.body.batch.results.map((r: any) => r.index)).toEqual([items.length - 2, items.length - 1]);
    expect((await get(system, `/quests/${q}/batches/bat_00000000000000000000000000`, auth)).body.code).toBe('BATCH_NOT_FOUND');
    expect((await get(system, `/quests/${q}/batches/${id}`)).status).toBe(401);
  });

  test('pages of results tile the whole answer, payouts and rejections interleaved', async ({
    system,
    database,
    owner,
    quest,
  }) => {
    const auth = { 'x-api-key': owner.apiKey };
    const accounts = await createAccounts(database.sql, 20);
    // Every third item names an address with no account: a rejection between payouts.
    const items = Array.from({ length: 30 }, (_, i) => ({
      address: i % 3 === 1 ? testAddress(0x5000 + i) : accounts[i % 20]!,
      points: 1 + i,
    }));
    const res = await batch(system, quest, items, auth);
    expect(res.status).toBe(200);
    const all = res.body.batch.results;
    expect(all.map((r: any) => r.status)).toEqual(items.map((_, i) => (i % 3 === 1 ? 'rejected' : 'completed')));
    const id = res.body.batch.id;
    const page = async (q: string) => (await get(system, `/quests/${quest}/batches/${id}?${q}`, auth)).body.batch.results;
    for (const size of [1, 4, 7]) {
      const tiles: unknown[] = [];
      for (let offset = 0; offset < items.length; offset += size) tiles.push(...(await page(`limit=${size}&offset=${offset}`)));
      expect(tiles).toEqual(all);
    }
    expect(await page('limit=5&offset=28')).toEqual(all.slice(28));
    expect(await page('limit=5&offset=30')).toEqual([]);
    expect(await page('offset=1000')).toEqual([]);
  });

  test('with an Idempotency-Key: a repeat credits nothing twice; different items → IDEMPOTENCY_KEY_REUSED', async ({
    system,
    database,
    owner,
    quest,
  }) => {
    const headers = { 'x-api-key': owner.apiKey, 'idempotency-key': 'event-42' };
    const accounts = await createAccounts(database.sql, 20);
    const items = accounts.map((address) => ({ address, points: 5 }));
    const [a, b] = await Promise.all([batch(system, quest, items, headers), batch(system, quest, items, headers)]);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(a.body.batch.id).toBe(b.body.batch.id);
    expect(b.body.batch.results).toEqual(a.body.batch.results);
    // One of the two created the batch; the other's answer reports it, and says so.
    expect(new Set([a, b].map((r) => r.headers.get('idempotent-replayed')))).toEqual(new Set([null, 'true']));
    const c = await batch(system, quest, items, headers);
    expect(c.body.batch.results).toEqual(a.body.batch.results);
    expect(c.headers.get('idempotent-replayed')).toBe('true');
    const d = await batch(system, quest, items.slice(1), headers);
    expect(d.status).toBe(400);
    expect(d.body.code).toBe('IDEMPOTENCY_KEY_REUSED');
    // The size of the batch stored under the key, so a client re-cutting a file can name it.
    expect(d.body.details).toEqual({ total: items.length });
    expect(d.headers.get('idempotent-replayed')).toBeNull();
    expect((await payoutTotals(system, quest)).n).toBe(items.length);
  });

  test('Prefer: respond-async answers 202 once queued; batches sent each after the previous answer are decided in that order', async ({
    system,
    database,
    owner,
    makeQuest,
  }) => {
    const q = await makeQuest({ totalPoints: 10_000_000 });
    const accounts = await createAccounts(database.sql, 600);
    const ids: string[] = [];
    for (let k = 0; k < 6; k++) {
      const items = accounts.slice(k * 100, (k + 1) * 100).map((address) => ({ address, points: 1 }));
      const res = await batch(system, q, items, { 'x-api-key': owner.apiKey, prefer: 'wait=5, respond-async' });
      expect(res.status, JSON.stringify(res.body)).toBe(202);
      expect(res.headers.get('preference-applied')).toBe('respond-async');
      expect(res.headers.get('location')).toBe(`/quests/${q}/batches/${res.body.batch.id}`);
      ids.push(res.body.batch.id);
    }
    for (const id of ids) {
      const done = await settle(system, `/quests/${q}/batches/${id}`, owner.apiKey, 60_000);
      expect(done.batch.status).toBe('completed');
    }
    // Decision order (payouts.seq) is the order the batches were sent in.
    const order = await system.db.sql<{ batch_id: string }[]>`
      select batch_id from payouts where quest_id = ${q} order by seq`;
    expect(order).toHaveLength(600);
    expect([...new Set(order.map((r) => r.batch_id))]).toEqual(ids);
    // Without the preference the answer waits for the decision (BATCH_WAIT_MS), as before.
    const plain = await batch(system, q, [{ address: accounts[0]!, points: 1 }], { 'x-api-key': owner.apiKey });
    expect(plain.status).toBe(200);
    expect(plain.headers.get('preference-applied')).toBeNull();
  });

  test("takes its place in the quest's order like one request, interleaved with single allocations", async ({
    system,
    database,
    owner,
    makeQuest,
  }) => {
    const auth = { 'x-api-key': owner.apiKey };
    const ROUNDS = 10;
    const SINGLES = 5;
    const BATCH_ITEMS = 100;
    const q = await makeQuest({ totalPoints: 10_000_000 });
    const singles = await createAccounts(database.sql, ROUNDS * SINGLES);
    const batched = await createAccounts(database.sql, ROUNDS * BATCH_ITEMS);
    const requests: Promise<{ status: number }>[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      for (let k = 0; k < SINGLES; k++)
        requests.push(post(system, `/quests/${q}`, { points: 1, address: singles[round * SINGLES + k]! }, auth));
      const slice = batched.slice(round * BATCH_ITEMS, (round + 1) * BATCH_ITEMS);
      requests.push(
        batch(
          system,
          q,
          slice.map((address) => ({ address, points: 2 })),
          auth,
        ),
      );
    }
    const answers = await Promise.all(requests);
    expect(answers.map((a) => a.status)).toEqual(requests.map(() => 200));

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
    expect(payouts).toHaveLength(singles.length + batched.length);
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
    expect(await auditViolations(system.db.sql)).toEqual([]);
  });
});

describe('a worker killed mid-batch', () => {
  test('resumes where the last committed chunk ended, losing and doubling no item', async ({
    system,
    database,
    owner,
    makeQuest,
    onTestFinished,
  }) => {
    const q = await makeQuest({ totalPoints: 10_000_000 });
    const accounts = await createAccounts(database.sql, BATCH_MAX_ITEMS);
    const items = accounts.map((address) => ({ address, points: 3 }));

    // This test swaps the file's worker for its own; whatever happens, the next test finds one
    // worker with the file's settings again.
    const started: Awaited<ReturnType<System['startWorker']>>[] = [];
    onTestFinished(async () => {
      await Promise.all(started.map((w) => w.stop('SIGTERM')));
      if (liveWorkers(system).length === 0) await system.startWorker();
    });
    await Promise.all(liveWorkers(system).map((w) => w.stop('SIGTERM')));
    // Small chunks, so the kill lands mid-batch.
    const slow = await system.startWorker({ BATCH_CHUNK_SIZE: '200' });
    started.push(slow);

    const pending = batch(system, q, items, { 'x-api-key': owner.apiKey, 'idempotency-key': 'crash-batch' });
    const processed = async () =>
      (await system.db.sql<{ processed: number }[]>`select processed from batches where quest_id = ${q}`)[0]?.processed ?? 0;
    // The first chunk is committed: kill the worker now, in the middle of the batch.
    await vi.waitFor(async () => expect(await processed()).toBeGreaterThan(0), { timeout: 30_000, interval: 5 });
    slow.child.kill('SIGKILL');
    await slow.exited;
    expect(await processed()).toBeLessThan(items.length);

    started.push(await system.startWorker({ BATCH_CHUNK_SIZE: '2000' }));
    const res = await pending;
    expect([200, 202], JSON.stringify(res.body).slice(0, 300)).toContain(res.status);
    const done = await finalBatch(system, res, owner.apiKey);
    expect(done).toMatchObject({ status: 'completed', total: items.length, succeeded: items.length, failed: 0 });
    const { n, distinct } = await payoutTotals(system, q);
    expect({ n, distinct }).toEqual({ n: items.length, distinct: items.length });
    expect(await auditViolations(system.db.sql)).toEqual([]);
  });
});
