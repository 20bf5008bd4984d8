import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import postgres from 'postgres';
import {
  applyBatchChunk,
  applyRequests,
  BatchProgressMoved,
  classifyDbError,
  type LedgerItem,
  type LedgerRequest,
  pipelinedTransaction,
} from '@quest/db';
import { JobAbandoned } from '@quest/domain';
import { auditViolations } from '@quest/testing';
import { createTestDatabase, type TestDatabase } from '@quest/testing';

let db: TestDatabase;
const addr = (n: number) => `0x${n.toString(16).padStart(40, '0')}`;
let seq = 0;

async function quest(
  opts: { total?: number; start?: Date; end?: Date; action?: 'active' | 'deactivated' } = {},
): Promise<number> {
  const [row] = await db.sql<{ id: number }[]>`
    insert into quests (owner_id, name, start_at, end_at, total_points, points_remaining, action_status)
    values ('own_t', 'Q', ${opts.start ?? new Date(Date.now() - 60_000)}, ${opts.end ?? new Date(Date.now() + 3_600_000)},
            ${opts.total ?? 1000}, ${opts.total ?? 1000}, ${opts.action ?? 'active'}) returning id`;
  return row!.id;
}
const item = (questId: number, points: number, address: string, key = `k${++seq}`): LedgerItem => ({
  key,
  questId,
  points,
  address,
});

async function ledgerState(questId: number) {
  const [q] = await db.sql<
    { total_points: number; points_remaining: number }[]
  >`select total_points, points_remaining from quests where id = ${questId}`;
  const [p] = await db.sql<
    { n: number; sum: number }[]
  >`select count(*)::int8 as n, coalesce(sum(amount), 0)::int8 as sum from payouts where quest_id = ${questId}`;
  return { ...q!, payouts: p!.n, paid: p!.sum };
}

beforeAll(async () => {
  db = await createTestDatabase();
  await db.sql`insert into owners (id, name, pass_address) values ('own_t', 'T', ${addr(999_999)})`;
  await db.sql`insert into accounts (pass_address) select '0x' || lpad(to_hex(n), 40, '0') from generate_series(1, 200) n`;
});
afterAll(async () => db?.drop());

/** Every attempt after a job's first delivery reads stored outcomes for every item. */
const applyAllocations = (sql: typeof db.sql, items: LedgerRequest[], opts: { now?: Date } = {}) =>
  applyRequests(sql, items, { ...opts, firstDelivery: false });

const reversal = (
  questId: number,
  payoutId: string,
  points?: number,
  key = `rev_${++seq}`,
): Extract<LedgerRequest, { kind: 'reversal' }> => ({
  kind: 'reversal',
  key,
  questId,
  payoutId,
  ...(points === undefined ? {} : { points }),
});
const balance = async (address: string) =>
  (await db.sql<{ balance: number }[]>`select balance from accounts where pass_address = ${address}`)[0]!.balance;
const reversedOf = async (payoutId: string) =>
  (
    await db.sql<{ n: number; sum: number }[]>`
    select count(*)::int8 as n, coalesce(sum(amount), 0)::int8 as sum from reversals where payout_id = ${payoutId}`
  )[0]!;
const payoutIdOf = (o: Awaited<ReturnType<typeof applyAllocations>>[number] | undefined) => {
  if (o?.status !== 'completed') throw new Error(`expected a payout, got ${JSON.stringify(o)}`);
  return o.payout.id;
};

describe('applyRequests', () => {
  it('credits in order against the budget: 60 → 50 → 40 on 100 gives accept, reject, accept', async () => {
    const q = await quest({ total: 100 });
    const out = await applyAllocations(db.sql, [item(q, 60, addr(1)), item(q, 50, addr(2)), item(q, 40, addr(3))]);
    expect(out.map((o) => (o.status === 'rejected' ? o.code : o.status))).toEqual([
      'completed',
      'INSUFFICIENT_POINTS',
      'completed',
    ]);
    expect(await ledgerState(q)).toMatchObject({ points_remaining: 0, payouts: 2, paid: 100 });
    const [acc] = await db.sql<{ balance: number }[]>`select balance from accounts where pass_address = ${addr(1)}`;
    expect(acc!.balance).toBeGreaterThanOrEqual(60);
  });

  it('returns the payout view with id, amount, created_at and checksummed pass', async () => {
    const q = await quest();
    const now = new Date('2030-01-01T00:00:00.000Z');
    const q2 = await quest({ start: new Date('2029-01-01'), end: new Date('2031-01-01') });
    const [o] = await applyAllocations(db.sql, [item(q2, 7, addr(5))], { now });
    expect(o).toEqual({
      status: 'completed',
      payout: {
        id: expect.stringMatching(/^pay_[0-9a-z]{26}$/),
        amount: 7,
        created_at: now.toISOString(),
        account: { pass: addr(5) },
      },
    });
    expect(q).toBeGreaterThan(0);
  });

  it('rejects outside the window, with the action type deactivated, and for unknown accounts', async () => {
    const future = await quest({ start: new Date(Date.now() + 3_600_000), end: new Date(Date.now() + 7_200_000) });
    const ended = await quest({ start: new Date(Date.now() - 7_200_000), end: new Date(Date.now() - 1) });
    const off = await quest({ action: 'deactivated' });
    const ok = await quest();
    const out = await applyAllocations(db.sql, [
      item(future, 1, addr(1)),
      item(ended, 1, addr(1)),
      item(off, 1, addr(1)),
      item(ok, 1, addr(123_456)),
    ]);
    expect(out).toEqual([
      { status: 'rejected', code: 'QUEST_NOT_ACTIVE' },
      { status: 'rejected', code: 'QUEST_NOT_ACTIVE' },
      { status: 'rejected', code: 'ACTION_TYPE_INACTIVE' },
      { status: 'rejected', code: 'ACCOUNT_NOT_FOUND' },
    ]);
    for (const q of [future, ended, off, ok]) expect((await ledgerState(q)).payouts).toBe(0);
    const [r] = await db.sql<
      { n: number }[]
    >`select count(*)::int8 as n from allocation_rejections where quest_id = any(${[future, ended, off, ok]}::int[])`;
    expect(r!.n).toBe(4);
  });

  it('replays a stored outcome for the same request key and refuses a different body', async () => {
    const q = await quest({ total: 50 });
    const [first] = await applyAllocations(db.sql, [item(q, 30, addr(9), 'idem-1')]);
    const [again] = await applyAllocations(db.sql, [item(q, 30, addr(9), 'idem-1')]);
    expect(again).toEqual({ ...first, replayed: true });
    const [other] = await applyAllocations(db.sql, [item(q, 31, addr(9), 'idem-1')]);
    expect(other).toEqual({ status: 'rejected', code: 'IDEMPOTENCY_KEY_REUSED' });
    const [rej] = await applyAllocations(db.sql, [item(q, 500, addr(9), 'idem-2')]);
    const [rejAgain] = await applyAllocations(db.sql, [item(q, 500, addr(9), 'idem-2')]);
    expect(rej).toEqual({ status: 'rejected', code: 'INSUFFICIENT_POINTS' });
    expect(rejAgain).toEqual({ ...rej, replayed: true });
    expect(await ledgerState(q)).toMatchObject({ points_remaining: 20, payouts: 1, paid: 30 });
  });

  it('writes nothing once its job is abandoned: an aborted signal rolls the plan back', async () => {
    const q = await quest({ total: 100 });
    const abort = new AbortController();
    abort.abort(new JobAbandoned());
    await expect(
      applyRequests(db.sql, [item(q, 10, addr(7))], { firstDelivery: true, signal: abort.signal }),
    ).rejects.toBeInstanceOf(JobAbandoned);
    expect(await ledgerState(q)).toMatchObject({ points_remaining: 100, payouts: 0 });
    // The connection went back to the pool usable, its transaction rolled back.
    await expect(applyRequests(db.sql, [item(q, 10, addr(7))], { firstDelivery: true })).resolves.toMatchObject([
      { status: 'completed' },
    ]);
    expect(await ledgerState(q)).toMatchObject({ points_remaining: 90, payouts: 1 });
  });

  it('treats a repeated key inside one list as one request', async () => {
    const q = await quest({ total: 100 });
    const out = await applyAllocations(db.sql, [
      item(q, 10, addr(4), 'dup'),
      item(q, 10, addr(4), 'dup'),
      item(q, 11, addr(4), 'dup'),
    ]);
    expect(out[1]).toEqual({ ...out[0], replayed: true });
    expect(out[0]!.status).toBe('completed');
    expect(out[2]).toEqual({ status: 'rejected', code: 'IDEMPOTENCY_KEY_REUSED' });
    expect(await ledgerState(q)).toMatchObject({ points_remaining: 90, payouts: 1 });
  });

  it('never overspends under concurrent transactions on one quest', async () => {
    const q = await quest({ total: 1000 });
    const jobs = Array.from({ length: 50 }, (_, j) =>
      applyAllocations(
        db.sql,
        Array.from({ length: 4 }, (_, k) => item(q, 10, addr(1 + ((j * 4 + k) % 200)))),
      ),
    );
    const results = (await Promise.all(jobs)).flat();
    expect(results.filter((o) => o.status === 'completed')).toHaveLength(100);
    expect(results.filter((o) => o.status === 'rejected' && o.code === 'INSUFFICIENT_POINTS')).toHaveLength(100);
    expect(await ledgerState(q)).toMatchObject({ points_remaining: 0, payouts: 100, paid: 1000 });
  });

  it('matches accounts whatever the letter case and answers their stored checksummed address', async () => {
    const stored = '0x52908400098527886E0F7030069857D2E4169EE7';
    await db.sql`insert into accounts (pass_address) values (${stored})`;
    const q = await quest();
    const out = await applyAllocations(db.sql, [
      item(q, 2, stored.toLowerCase()),
      item(q, 3, stored.toUpperCase().replace('0X', '0x')),
      item(q, 4, stored),
    ]);
    expect(out.map((o) => (o.status === 'completed' ? o.payout.account.pass : o.status))).toEqual([stored, stored, stored]);
    // A stored outcome replays for the same address in another case, and is a different body otherwise.
    const [first] = await applyAllocations(db.sql, [item(q, 5, stored, 'case-key')]);
    expect((await applyAllocations(db.sql, [item(q, 5, stored.toLowerCase(), 'case-key')]))[0]).toEqual({
      ...first,
      replayed: true,
    });
    // Two spellings of one address can never be two accounts.
    await expect(db.sql`insert into accounts (pass_address) values (${stored.toLowerCase()})`).rejects.toMatchObject({
      code: '23505',
    });
  });

  it('a batch chunk whose progress guard fails is not applied, although COMMIT was already sent', async () => {
    const q = await quest({ total: 100 });
    await db.sql`insert into batches (id, quest_id, owner_id, items_digest, total, processed, succeeded)
                 values ('bat_guard', ${q}, 'own_t', 'd', 4, 2, 2)`;
    const chunk = (start: number) =>
      [0, 1].map((k) => ({ ...item(q, 5, addr(40 + k), `bat_guard:${start + k}`), batchId: 'bat_guard', itemIndex: start + k }));
    // Another copy already advanced the batch to 2: a chunk starting at 0 must be refused whole.
    await expect(applyBatchChunk(db.sql, { batchId: 'bat_guard', start: 0, items: chunk(0) })).rejects.toBeInstanceOf(
      BatchProgressMoved,
    );
    expect(await ledgerState(q)).toMatchObject({ points_remaining: 100, payouts: 0 });
    // The chunk that starts where the batch stands is applied and completes it.
    await applyBatchChunk(db.sql, { batchId: 'bat_guard', start: 2, items: chunk(2) });
    expect(await ledgerState(q)).toMatchObject({ points_remaining: 90, payouts: 2 });
    const [b] = await db.sql<
      { status: string; processed: number }[]
    >`select status, processed from batches where id = 'bat_guard'`;
    expect(b).toEqual({ status: 'completed', processed: 4 });
  });

  it("a chunk being applied does not hold up inserts that reference its quest (the quest's next batch row)", async () => {
    const q = await quest({ total: 100 });
    await db.sql`insert into batches (id, quest_id, owner_id, items_digest, total) values ('bat_held', ${q}, 'own_t', 'd', 1)`;
    const holder = postgres(db.url, { max: 1, onnotice: () => {} });
    const other = postgres(db.url, { max: 1, onnotice: () => {}, connection: { lock_timeout: 5000 } });
    let release!: () => void;
    const released = new Promise<void>((r) => {
      release = r;
    });
    let locked!: () => void;
    const isLocked = new Promise<void>((r) => {
      locked = r;
    });
    try {
      // Hold the batch's row: the chunk's transaction takes the quest lock, then waits at its progress update.
      const held = holder.begin(async (tx) => {
        await tx`select 1 from batches where id = 'bat_held' for update`;
        locked();
        await released;
      });
      await isLocked;
      const chunk = applyBatchChunk(db.sql, {
        batchId: 'bat_held',
        start: 0,
        items: [{ ...item(q, 5, addr(60), 'bat_held:0'), batchId: 'bat_held', itemIndex: 0 }],
      });
      await vi.waitFor(
        async () => {
          const [w] = await db.sql<{ n: number }[]>`
            select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`;
          expect(w!.n).toBe(1);
        },
        { timeout: 10_000, interval: 20 },
      );
      // A new batch of the same quest: its foreign key takes KEY SHARE on the quest row, which the
      // ledger's FOR NO KEY UPDATE allows (FOR UPDATE made it wait for the whole chunk).
      await other`insert into batches (id, quest_id, owner_id, items_digest, total) values ('bat_next', ${q}, 'own_t', 'd', 1)`;
      release();
      await held;
      await chunk;
      expect(await ledgerState(q)).toMatchObject({ points_remaining: 95, payouts: 1 });
    } finally {
      release();
      await holder.end();
      await other.end();
    }
  });

  it('pipelinedTransaction applies nothing when any statement fails, and frees its connection', async () => {
    await db.sql`create table if not exists pipeline_probe (n int primary key)`;
    await expect(
      pipelinedTransaction(db.sql, async (tx, commit) => {
        await tx`select 1`;
        await commit([
          tx`insert into pipeline_probe values (1)`,
          tx`insert into pipeline_probe values (1)`,
          tx`insert into pipeline_probe values (2)`,
        ]);
      }),
    ).rejects.toMatchObject({ code: '23505' });
    expect(await db.sql`select n from pipeline_probe`).toHaveLength(0);
    await pipelinedTransaction(db.sql, (tx, commit) => commit([tx`insert into pipeline_probe values (3)`]));
    expect((await db.sql<{ n: number }[]>`select n from pipeline_probe`).map((r) => r.n)).toEqual([3]);
    // A JavaScript failure between the phases rolls back too.
    await expect(
      pipelinedTransaction(db.sql, async (tx) => {
        await tx`insert into pipeline_probe values (4)`;
        throw new Error('bug');
      }),
    ).rejects.toThrow('bug');
    expect((await db.sql<{ n: number }[]>`select n from pipeline_probe`).map((r) => r.n)).toEqual([3]);
  });

  it('rejects a credit past the account balance limit on its own, and keeps crediting others', async () => {
    const big = await quest({ total: Number.MAX_SAFE_INTEGER });
    const q = await quest({ total: 100 });
    const full = addr(150);
    // One coalesced list over two quests: the first fills the account, the second sees it full.
    const out = await applyAllocations(db.sql, [
      item(big, Number.MAX_SAFE_INTEGER, full),
      item(q, 1, full),
      item(q, 7, addr(151)),
    ]);
    expect(out.map((o) => (o.status === 'rejected' ? o.code : o.status))).toEqual([
      'completed',
      'BALANCE_LIMIT_EXCEEDED',
      'completed',
    ]);
    // Later credits to the full account are decided (rejected), not failed, in any job.
    const [later] = await applyAllocations(db.sql, [item(q, 1, full)]);
    expect(later).toEqual({ status: 'rejected', code: 'BALANCE_LIMIT_EXCEEDED' });
  });

  it('a first delivery that meets an outcome another worker committed is a conflict, and a retry replays it', async () => {
    const q = await quest({ total: 100 });
    const generated = item(q, 10, addr(60), 'alc_0generatedkey');
    const [paid] = await applyRequests(db.sql, [generated], { firstDelivery: true });
    const error = await applyRequests(db.sql, [generated], { firstDelivery: true }).catch((e: unknown) => e);
    expect(classifyDbError(error)).toBe('conflict');
    expect((await applyRequests(db.sql, [generated], { firstDelivery: false }))[0]).toEqual({ ...paid, replayed: true });
    expect(await ledgerState(q)).toMatchObject({ points_remaining: 90, payouts: 1 });
  });

  it('pipelinedTransaction survives its backend being terminated, and the pool keeps working', async () => {
    const sql = postgres(db.url, { max: 2, onnotice: () => {} }) as unknown as typeof db.sql;
    try {
      const q = await quest({ total: 100 });
      // Terminate the backend between the two round trips: nothing may be sent on the dead
      // connection (postgres.js would hang or throw from a setImmediate), nothing is applied.
      const error = await pipelinedTransaction(sql, async (tx, commit) => {
        const [row] = await tx<{ pid: number }[]>`select pg_backend_pid() as pid`;
        const pid = row!.pid;
        await db.sql`select pg_terminate_backend(${pid})`;
        await commit([tx`update quests set points_remaining = 0 where id = ${q}`]);
      }).catch((e: unknown) => e);
      expect(classifyDbError(error)).toBe('transient');
      for (let i = 0; i < 4; i++) expect(await sql`select 1 as one`).toEqual([{ one: 1 }]);
      expect(await ledgerState(q)).toMatchObject({ points_remaining: 100 });
    } finally {
      await sql.end({ timeout: 1 });
    }
  });

  it('keeps balances equal to the sum of payouts across quests', async () => {
    const rows = await db.sql<{ id: number }[]>`
      select a.id from accounts a left join (select account_id, sum(amount) s from payouts group by 1) p on p.account_id = a.id
      where a.balance <> coalesce(p.s, 0)`;
    expect(rows).toEqual([]);
  });
});

describe('applyRequests: reversals', () => {
  // Accounts of their own: the tests above move the balances of 1..200.
  beforeAll(async () => {
    await db.sql`insert into accounts (pass_address) select '0x' || lpad(to_hex(n), 40, '0') from generate_series(5150, 5156) n`;
  });

  it('takes points back in one transaction: budget up, balance down, a reversal row; answered with its view', async () => {
    const q = await quest({ total: 100 });
    const payoutId = payoutIdOf((await applyAllocations(db.sql, [item(q, 60, addr(5150))]))[0]);
    const now = new Date();
    const [out] = await applyAllocations(db.sql, [{ ...reversal(q, payoutId, 20, 'rev_one'), reason: 'bot farm' }], { now });
    expect(out).toEqual({
      status: 'reversed',
      reversal: {
        id: 'rev_one',
        payout_id: payoutId,
        quest_id: q,
        amount: 20,
        reason: 'bot farm',
        created_at: now.toISOString(),
        account: { pass: addr(5150) },
      },
    });
    expect(await ledgerState(q)).toMatchObject({ points_remaining: 60, paid: 60 });
    expect(await balance(addr(5150))).toBe(40);
    expect(await reversedOf(payoutId)).toEqual({ n: 1, sum: 20 });
    expect(await auditViolations(db.sql)).toEqual([]);
  });

  it('adds partial reversals up to the payout, rejects the excess, and reverses the remainder by default', async () => {
    const q = await quest({ total: 100 });
    const payoutId = payoutIdOf((await applyAllocations(db.sql, [item(q, 50, addr(5151))]))[0]);
    const out = await applyAllocations(db.sql, [reversal(q, payoutId, 10), reversal(q, payoutId, 15), reversal(q, payoutId, 26)]);
    expect(out.map((o) => (o.status === 'rejected' ? o.code : o.status))).toEqual([
      'reversed',
      'reversed',
      'REVERSAL_EXCEEDS_PAYOUT',
    ]);
    const [rest] = await applyAllocations(db.sql, [reversal(q, payoutId)]);
    expect(rest).toMatchObject({ status: 'reversed', reversal: { amount: 25 } });
    const [none] = await applyAllocations(db.sql, [reversal(q, payoutId, 1)]);
    expect(none).toEqual({ status: 'rejected', code: 'PAYOUT_ALREADY_REVERSED' });
    expect(await reversedOf(payoutId)).toEqual({ n: 3, sum: 50 });
    expect(await ledgerState(q)).toMatchObject({ points_remaining: 100 });
    expect(await balance(addr(5151))).toBe(0);
    const [r] = await db.sql<{ n: number }[]>`select count(*)::int as n from reversal_rejections where payout_id = ${payoutId}`;
    expect(r!.n).toBe(2);
    expect(await auditViolations(db.sql)).toEqual([]);
  });

  it('allocation → reversal → allocation on an exhausted budget: the last one is credited', async () => {
    const q = await quest({ total: 30 });
    const payoutId = payoutIdOf((await applyAllocations(db.sql, [item(q, 30, addr(5152))]))[0]);
    const out = await applyAllocations(db.sql, [item(q, 30, addr(5153)), reversal(q, payoutId), item(q, 30, addr(5153))]);
    expect(out.map((o) => (o.status === 'rejected' ? o.code : o.status))).toEqual([
      'INSUFFICIENT_POINTS',
      'reversed',
      'completed',
    ]);
    expect(await ledgerState(q)).toMatchObject({ points_remaining: 0, payouts: 2, paid: 60 });
    expect([await balance(addr(5152)), await balance(addr(5153))]).toEqual([0, 30]);
    expect(await auditViolations(db.sql)).toEqual([]);
  });

  it('returns the budget also after the window ended, and refuses a payout of another quest as PAYOUT_NOT_FOUND', async () => {
    const q = await quest({ total: 100 });
    const other = await quest({ total: 100 });
    const payoutId = payoutIdOf((await applyAllocations(db.sql, [item(q, 40, addr(5154))]))[0]);
    await db.sql`update quests set end_at = now() - interval '1 second', start_at = now() - interval '2 hours' where id = ${q}`;
    expect((await applyAllocations(db.sql, [item(q, 1, addr(5154))]))[0]).toEqual({
      status: 'rejected',
      code: 'QUEST_NOT_ACTIVE',
    });
    const [wrong] = await applyAllocations(db.sql, [reversal(other, payoutId, 5)]);
    expect(wrong).toEqual({ status: 'rejected', code: 'PAYOUT_NOT_FOUND' });
    const [late] = await applyAllocations(db.sql, [reversal(q, payoutId, 5)]);
    expect(late).toMatchObject({ status: 'reversed', reversal: { amount: 5 } });
    expect(await ledgerState(q)).toMatchObject({ points_remaining: 65 });
    expect(await ledgerState(other)).toMatchObject({ points_remaining: 100 });
  });

  it('replays a stored reversal or rejection for the same key and body, and refuses another body', async () => {
    const q = await quest({ total: 100 });
    const payoutId = payoutIdOf((await applyAllocations(db.sql, [item(q, 40, addr(5155))]))[0]);
    const [first] = await applyAllocations(db.sql, [reversal(q, payoutId, undefined, 'rev_kreplay')]);
    // A job's first delivery reads stored outcomes for client keys (rev_k…): replayed, not applied twice.
    const [again] = await applyRequests(db.sql, [reversal(q, payoutId, undefined, 'rev_kreplay')], { firstDelivery: true });
    expect(again).toEqual({ ...first, replayed: true });
    const [other] = await applyAllocations(db.sql, [reversal(q, payoutId, 3, 'rev_kreplay')]);
    expect(other).toEqual({ status: 'rejected', code: 'IDEMPOTENCY_KEY_REUSED' });
    const [refused] = await applyAllocations(db.sql, [reversal(q, payoutId, 1, 'rev_krefused')]);
    const [refusedAgain] = await applyAllocations(db.sql, [reversal(q, payoutId, 1, 'rev_krefused')]);
    expect(refused).toEqual({ status: 'rejected', code: 'PAYOUT_ALREADY_REVERSED' });
    expect(refusedAgain).toEqual({ ...refused, replayed: true });
    expect(await reversedOf(payoutId)).toEqual({ n: 1, sum: 40 });
    expect(await ledgerState(q)).toMatchObject({ points_remaining: 100 });
  });

  it('never reverses more than a payout under concurrent transactions', async () => {
    const q = await quest({ total: 1000 });
    const payoutId = payoutIdOf((await applyAllocations(db.sql, [item(q, 100, addr(5156))]))[0]);
    const results = (
      await Promise.all(Array.from({ length: 30 }, () => applyAllocations(db.sql, [reversal(q, payoutId, 7)])))
    ).flat();
    expect(results.filter((o) => o.status === 'reversed')).toHaveLength(14);
    expect(results.filter((o) => o.status === 'rejected' && o.code === 'REVERSAL_EXCEEDS_PAYOUT')).toHaveLength(16);
    expect(await reversedOf(payoutId)).toEqual({ n: 14, sum: 98 });
    expect(await auditViolations(db.sql)).toEqual([]);
  });

  it('a stale first-delivery attempt cannot decide again a key another attempt decided (conflict, then replay)', async () => {
    const q = await quest({ total: 10 });
    await db.sql`insert into accounts (pass_address) values (${addr(5157)})`;
    const paying = item(q, 10, addr(5157));
    const [first] = await applyRequests(db.sql, [paying], { firstDelivery: true });
    expect(first).toMatchObject({ status: 'completed' });
    // The same job's first delivery, resumed after the next owner decided it: it skips the stored
    // outcome of a generated key and, the budget now spent, would store a rejection beside the payout.
    const stale = await applyRequests(db.sql, [paying], { firstDelivery: true }).catch((e: unknown) => e);
    expect(classifyDbError(stale)).toBe('conflict');
    const [replayed] = await applyRequests(db.sql, [paying], { firstDelivery: false });
    expect(replayed).toMatchObject({ status: 'completed', payout: { id: payoutIdOf(first) } });
    expect(await db.sql`select 1 from allocation_rejections where quest_id = ${q}`).toHaveLength(0);

    // Likewise a reversal applied, then refused by a stale attempt (the payout is now fully reversed).
    const r = reversal(q, payoutIdOf(first));
    expect((await applyRequests(db.sql, [r], { firstDelivery: true }))[0]).toMatchObject({ status: 'reversed' });
    const staleReversal = await applyRequests(db.sql, [r], { firstDelivery: true }).catch((e: unknown) => e);
    expect(classifyDbError(staleReversal)).toBe('conflict');
    expect((await applyRequests(db.sql, [r], { firstDelivery: false }))[0]).toMatchObject({ status: 'reversed' });
    expect(await db.sql`select 1 from reversal_rejections where quest_id = ${q}`).toHaveLength(0);
    expect(await auditViolations(db.sql)).toEqual([]);
  });
});
