import { describe, expect } from 'vitest';
import { idempotentRequestKey } from '@quest/domain';
import {
  auditViolations,
  completedJobs,
  createOwner,
  get,
  post,
  type SeededOwner,
  type System,
  settle,
  systemTest,
} from '@quest/testing';

// Jobs are kept long enough to read the enqueue order back from them.
const test = systemTest({ workers: 1, partitions: 4, env: { JOB_RETENTION_SECONDS: '600' } });

/**
 * Reversals through the real API and worker processes: decided in the quest's order with its
 * allocations, exactly once, never more than their payout, owner-only, and the ledger audit clean
 * after each scenario.
 */

type Decision = { status: string; code?: string; body: any };

/** The decision of a POST: its 200/400 answer, or — after a 202 — what its status URL settles on. */
async function decided(
  system: System,
  owner: SeededOwner,
  res: { status: number; body: any; headers: Headers },
): Promise<Decision> {
  if (res.status === 202) {
    const final = await settle(system, res.headers.get('location')!, owner.apiKey);
    const view = final.allocation ?? final.reversal;
    return { status: view.status, code: view.error?.code, body: view };
  }
  if (res.status === 200) return { status: 'completed', body: res.body };
  return { status: 'rejected', code: res.body.code, body: res.body };
}

const credit = (system: System, owner: SeededOwner, questId: number, address: string, points: number, key?: string) =>
  post(
    system,
    `/quests/${questId}`,
    { points, address },
    { 'x-api-key': owner.apiKey, ...(key ? { 'idempotency-key': key } : {}) },
  );

const reverse = (system: System, owner: SeededOwner, questId: number, payoutId: string, body: object = {}, key?: string) =>
  post(system, `/quests/${questId}/payouts/${payoutId}/reversals`, body, {
    'x-api-key': owner.apiKey,
    ...(key ? { 'idempotency-key': key } : {}),
  });

async function questView(system: System, owner: SeededOwner, questId: number) {
  const res = await get(system, `/quests/${questId}?limit=100`, { 'x-api-key': owner.apiKey });
  expect(res.status).toBe(200);
  return res.body;
}

describe('reversals through the API and the worker', () => {
  test('allocation → reversal → allocation on an exhausted budget: the last allocation is credited', async ({
    system,
    owner,
    makeQuest,
    accounts: [a, b],
  }) => {
    const questId = await makeQuest({ totalPoints: 50 });
    const first = await decided(system, owner, await credit(system, owner, questId, a!, 50));
    expect(first.status).toBe('completed');
    const refused = await decided(system, owner, await credit(system, owner, questId, b!, 50));
    expect(refused).toMatchObject({ status: 'rejected', code: 'INSUFFICIENT_POINTS' });

    const reversal = await decided(
      system,
      owner,
      await reverse(system, owner, questId, first.body.payout.id, { reason: 'bots' }),
    );
    expect(reversal.status).toBe('completed');
    expect(reversal.body.reversal ?? reversal.body).toMatchObject({ amount: 50, reason: 'bots', account: { pass: a } });
    expect((await questView(system, owner, questId)).points_remaining).toBe(50);

    const second = await decided(system, owner, await credit(system, owner, questId, b!, 50));
    expect(second.status).toBe('completed');
    const quest = await questView(system, owner, questId);
    expect(quest.points_remaining).toBe(0);
    // The spec's view keeps the spec's fields: the reversed payout is listed with its original amount.
    expect(quest.payouts.map((p: { amount: number; account: { pass: string } }) => [p.amount, p.account.pass])).toEqual([
      [50, b],
      [50, a],
    ]);
    expect(Object.keys(quest.payouts[1]).sort()).toEqual(['account', 'amount', 'created_at', 'id']);
    expect(await auditViolations(system.db.sql)).toEqual([]);
  });

  test('exactly once under a retried Idempotency-Key, concurrent and after the fact', async ({
    system,
    database,
    owner,
    makeQuest,
    accounts: [a],
  }) => {
    const questId = await makeQuest({ totalPoints: 100 });
    const payout = (await decided(system, owner, await credit(system, owner, questId, a!, 60))).body.payout;
    const body = { points: 25, reason: 'credited twice' };
    const tries = await Promise.all(
      Array.from({ length: 6 }, () => reverse(system, owner, questId, payout.id, body, 'refund-7')),
    );
    const later = await reverse(system, owner, questId, payout.id, body, 'refund-7');
    const outcomes = await Promise.all([...tries, later].map((r) => decided(system, owner, r)));
    const ids = new Set(outcomes.map((o) => (o.body.reversal ?? o.body).id));
    expect(outcomes.map((o) => o.status)).toEqual(Array(7).fill('completed'));
    expect(ids.size).toBe(1);
    expect(later.headers.get('idempotent-replayed')).toBe('true');
    const other = await reverse(system, owner, questId, payout.id, { points: 26, reason: 'credited twice' }, 'refund-7');
    expect(other.status).toBe(400);
    expect(other.body.code).toBe('IDEMPOTENCY_KEY_REUSED');

    const [row] = await database.sql<{ n: number; sum: number }[]>`
      select count(*)::int as n, coalesce(sum(amount), 0)::int8 as sum from reversals where payout_id = ${payout.id}`;
    expect(row).toEqual({ n: 1, sum: 25 });
    expect((await questView(system, owner, questId)).points_remaining).toBe(65);
    expect(await auditViolations(database.sql)).toEqual([]);
  });

  test('partial reversals add up to the payout; the excess is refused; the payout shows them', async ({
    system,
    owner,
    makeQuest,
    accounts: [a],
  }) => {
    const questId = await makeQuest({ totalPoints: 1000 });
    const payout = (await decided(system, owner, await credit(system, owner, questId, a!, 50))).body.payout;
    const steps: [object, string][] = [
      [{ points: 20 }, 'completed'],
      [{ points: 20 }, 'completed'],
      [{ points: 20 }, 'REVERSAL_EXCEEDS_PAYOUT'],
      [{}, 'completed'],
      [{ points: 1 }, 'PAYOUT_ALREADY_REVERSED'],
      [{}, 'PAYOUT_ALREADY_REVERSED'],
    ];
    const amounts: number[] = [];
    for (const [body, expected] of steps) {
      const res = await reverse(system, owner, questId, payout.id, body);
      const d = await decided(system, owner, res);
      expect(d.code ?? d.status, JSON.stringify(body)).toBe(expected);
      if (d.status === 'rejected' && res.status !== 202) expect(res.status).toBe(400);
      if (d.status === 'completed') amounts.push((d.body.reversal ?? d.body).amount);
    }
    expect(amounts).toEqual([20, 20, 10]);
    const detail = await get(system, `/quests/${questId}/payouts/${payout.id}`, { 'x-api-key': owner.apiKey });
    expect(detail.status).toBe(200);
    expect(detail.body.payout).toMatchObject({ id: payout.id, amount: 50, reversed_amount: 50 });
    expect(detail.body.payout.reversals.map((r: { amount: number }) => r.amount)).toEqual([20, 20, 10]);
    expect((await questView(system, owner, questId)).points_remaining).toBe(1000);
    expect(await auditViolations(system.db.sql)).toEqual([]);
  });

  test("another owner's key is refused 401, and reverses nothing", async ({
    system,
    database,
    owner,
    makeQuest,
    accounts: [a],
  }) => {
    const questId = await makeQuest({ totalPoints: 100 });
    const payout = (await decided(system, owner, await credit(system, owner, questId, a!, 10))).body.payout;
    const stranger = await createOwner(database.sql);
    const res = await post(system, `/quests/${questId}/payouts/${payout.id}/reversals`, {}, { 'x-api-key': stranger.apiKey });
    expect(res.status).toBe(401);
    expect(res.body.code).toBe('NOT_QUEST_OWNER');
    const status = await get(system, `/quests/${questId}/payouts/${payout.id}`, { 'x-api-key': stranger.apiKey });
    expect(status.status).toBe(401);
    const [row] = await database.sql<{ n: number }[]>`select count(*)::int as n from reversals where payout_id = ${payout.id}`;
    expect(row!.n).toBe(0);
  });

  test('reversals racing allocations for the last points are decided in enqueue order', async ({
    system,
    database,
    owner,
    makeQuest,
    accounts: [a, b],
  }) => {
    const ROUNDS = 12;
    const questId = await makeQuest({ totalPoints: 10 * ROUNDS });
    const payout = (await decided(system, owner, await credit(system, owner, questId, a!, 10 * ROUNDS))).body.payout;
    // The budget is exhausted: each allocation of 10 succeeds only if a reversal of 10 came before it.
    const sent = await Promise.all(
      Array.from({ length: ROUNDS }, (_, i) => [
        reverse(system, owner, questId, payout.id, { points: 10 }, `race-rev-${i}`),
        credit(system, owner, questId, b!, 10, `race-alc-${i}`),
      ]).flat(),
    );
    const outcomes = await Promise.all(sent.map((r) => decided(system, owner, r)));

    // Replay the decisions in enqueue order (a partition's job ids follow add order; items keep
    // their order inside a job) and compare each with what the service decided.
    const rank = new Map<string, [number, number]>();
    for (const job of await completedJobs(system)) {
      for (const [index, key] of job.keys.entries()) rank.set(key, [job.id, index]);
    }
    const requests = outcomes.map((outcome, n) => {
      const i = Math.floor(n / 2);
      const kind = n % 2 === 0 ? 'reversal' : 'allocation';
      const key =
        kind === 'reversal'
          ? idempotentRequestKey(owner.id, questId, `race-rev-${i}`, 'rev')
          : idempotentRequestKey(owner.id, questId, `race-alc-${i}`, 'alc');
      expect(rank.get(key), key).toBeDefined();
      return { kind, key, outcome, rank: rank.get(key)! };
    });
    requests.sort((x, y) => x.rank[0] - y.rank[0] || x.rank[1] - y.rank[1]);
    let remaining = 0;
    for (const r of requests) {
      if (r.kind === 'reversal') {
        expect(r.outcome.status, r.key).toBe('completed');
        remaining += 10;
      } else if (remaining >= 10) {
        expect(r.outcome.status, r.key).toBe('completed');
        remaining -= 10;
      } else {
        expect(r.outcome, r.key).toMatchObject({ status: 'rejected', code: 'INSUFFICIENT_POINTS' });
      }
    }
    expect((await questView(system, owner, questId)).points_remaining).toBe(remaining);
    expect(await auditViolations(database.sql)).toEqual([]);
  });
});
