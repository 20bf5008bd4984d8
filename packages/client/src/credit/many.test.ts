import { describe, expect, expectTypeOf, it } from 'vitest';
import { A, B, envelope, FAST_RETRY, json } from '../../test/fetch.ts';
import { createQuestClient } from '../client.ts';
import type { Payout } from '../types.ts';
import { CreditBatchError, type CreditBatchReport, type CreditRowResult } from './many.ts';
import type { CreditState } from './state.ts';

interface Row {
  n: number;
  address: string;
  points: number | string;
}

/**
 * A batch service in miniature, with the real one's idempotency: a key replays its stored batch
 * (Idempotent-Replayed), a key with another body is IDEMPOTENCY_KEY_REUSED. Items to address B are
 * rejected. `ledger` counts the credits each item of each key got: it must never exceed 1.
 */
function fakeService(o: { refuse?: (key: string) => Response | undefined } = {}) {
  const stored = new Map<string, { body: string; id: string; items: { address: string; points: number }[] }>();
  const posts: string[] = [];
  const credits = new Map<string, number>();
  const view = (b: { id: string; items: { address: string; points: number }[] }) => ({
    batch: {
      id: b.id,
      status: 'completed',
      total: b.items.length,
      processed: b.items.length,
      succeeded: b.items.filter((i) => i.address !== B).length,
      failed: b.items.filter((i) => i.address === B).length,
      created_at: '2026-03-01T12:00:00.000Z',
      updated_at: '2026-03-01T12:00:01.000Z',
      results: b.items.map((i, index) =>
        i.address === B
          ? {
              index,
              status: 'rejected',
              address: i.address,
              points: i.points,
              error: { code: 'ACCOUNT_NOT_FOUND', message: 'no' },
            }
          : {
              index,
              status: 'completed',
              payout: { id: `pay_${b.id}_${index}`, amount: i.points, created_at: 'x', account: { pass: i.address } },
            },
      ),
    },
  });
  const fetch = async (request: Request): Promise<Response> => {
    const key = request.headers.get('idempotency-key')!;
    const body = await request.text();
    posts.push(key);
    const refused = o.refuse?.(key);
    if (refused) return refused;
    const known = stored.get(key);
    if (known)
      return known.body === body
        ? json(200, view(known), { 'idempotent-replayed': 'true' })
        : envelope(400, 'IDEMPOTENCY_KEY_REUSED');
    const b = {
      body,
      id: `bat_${stored.size}`,
      items: (JSON.parse(body) as { allocations: { address: string; points: number }[] }).allocations,
    };
    stored.set(key, b);
    b.items.forEach((i, index) => {
      if (i.address !== B) credits.set(`${key}#${index}`, (credits.get(`${key}#${index}`) ?? 0) + 1);
    });
    return json(200, view(b));
  };
  return { fetch, posts, credits };
}

const rowsOf = (n: number, bad: (i: number) => Partial<Row> = () => ({})): Row[] =>
  Array.from({ length: n }, (_, i) => ({ n: i, address: A, points: i + 1, ...bad(i) }));

async function collect<R>(run: AsyncIterable<CreditBatchReport<R>>) {
  const reports: CreditBatchReport<R>[] = [];
  for await (const r of run) reports.push(r);
  return reports;
}

const clientOf = (fetch: (r: Request) => Promise<Response>) =>
  createQuestClient({ baseUrl: 'http://api.test', apiKey: 'sk_test', fetch, retry: FAST_RETRY });

describe('creditMany', () => {
  it('reports each batch in order, every input row once, invalid ones without sending them', async () => {
    const service = fakeService();
    const bad = (i: number) =>
      i === 1 ? { address: 'nope' } : i === 4 ? { address: B } : i === 6 ? { points: '1.5' } : i === 8 ? { points: 0 } : {};
    const rows = rowsOf(9, bad);
    const states: CreditState[] = [];
    const reports = await collect(
      clientOf(service.fetch).creditMany(7, rows, { batchSize: 2, keyPrefix: 'import-1', onState: (s) => void states.push(s) }),
    );
    expect(reports.map((r) => r.batch?.idempotencyKey ?? null)).toEqual(['import-1:r0', 'import-1:r2', 'import-1:r4', null]);
    expect(reports.map((r) => r.batch?.rows.map((row) => row.n))).toEqual([[0, 2], [3, 4], [5, 7], undefined]);
    const results = reports.flatMap((r) => r.results);
    expect(results.map((r) => [r.row.n, r.status])).toEqual([
      [0, 'credited'],
      [1, 'invalid'],
      [2, 'credited'],
      [3, 'credited'],
      [4, 'rejected'],
      [5, 'credited'],
      [6, 'invalid'],
      [7, 'credited'],
      [8, 'invalid'],
    ]);
    expect(results[1]).toEqual({
      row: rows[1],
      status: 'invalid',
      reason: 'address must be 0x followed by 40 hexadecimal digits',
    });
    expect(results[4]).toMatchObject({ status: 'rejected', code: 'ACCOUNT_NOT_FOUND', replayed: false });
    expect(results[0]).toMatchObject({ status: 'credited', payout: { amount: 1 }, replayed: false });
    expect(service.posts).toEqual(['import-1:r0', 'import-1:r2', 'import-1:r4']);
    // Stored before anything was sent, then after each report was handled.
    expect(states.map((s) => [s.rowsDone, s.batchesDone])).toEqual([
      [0, 0],
      [3, 1],
      [5, 2],
      [8, 3],
      [9, 3],
    ]);
    expect(results[8]).toMatchObject({ status: 'invalid', reason: 'points must be at least 1' });
    expect(reports.at(-1)!.state).toEqual({
      version: 1,
      questId: 7,
      keyPrefix: 'import-1',
      batchSize: 2,
      rowsDone: 9,
      batchesDone: 3,
    });
  });

  it('resumes from a stored state after a stop: done batches are skipped, the rest credited once, replays marked', async () => {
    const service = fakeService();
    const rows = rowsOf(10);
    let saved: CreditState | undefined;
    const first = clientOf(service.fetch).creditMany(7, rows, { batchSize: 2, concurrency: 3, onState: (s) => void (saved = s) });
    for await (const report of first) {
      expect(report.batch!.index).toBe(0);
      break; // leaving the loop counts the report broken on as handled: onState gets its state
    }
    expect(saved).toMatchObject({ rowsDone: 2, batchesDone: 1 });
    const sentBefore = service.posts.length;
    const resumed = await collect(clientOf(service.fetch).creditMany(7, rows, { state: saved }));
    expect(resumed.map((r) => r.batch!.index)).toEqual([1, 2, 3, 4]);
    expect(resumed.flatMap((r) => r.results.map((x) => x.row.n))).toEqual([2, 3, 4, 5, 6, 7, 8, 9]);
    // Batch 0 was not sent again; batches the first run had in flight came back as replays.
    expect(service.posts.slice(sentBefore)).not.toContain(`${saved!.keyPrefix}:r0`);
    const replayed = resumed.flatMap((r) => r.results).filter((r) => r.status === 'credited' && r.replayed);
    expect(replayed.length).toBe(2 * (sentBefore - 1));
    expect([...service.credits.values()].every((n) => n === 1)).toBe(true);
    expect(service.credits.size).toBe(10);
  });

  it('leaving the loop by a throw also stores the state of the report held', async () => {
    let saved: CreditState | undefined;
    const run = clientOf(fakeService().fetch).creditMany(7, rowsOf(6), { batchSize: 2, onState: (s) => void (saved = s) });
    const error = await (async () => {
      for await (const report of run) throw new Error(`stop at ${report.batch!.index}`);
    })().catch((e: unknown) => e);
    expect(error).toEqual(new Error('stop at 0'));
    expect(saved).toMatchObject({ rowsDone: 2, batchesDone: 1 });
  });

  it('a credited row always has its payout: a completed result without one is a BAD_RESPONSE', async () => {
    expectTypeOf<Extract<CreditRowResult<Row>, { status: 'credited' }>['payout']>().toEqualTypeOf<Payout>();
    const bare = {
      batch: {
        id: 'bat_0',
        status: 'completed',
        total: 1,
        processed: 1,
        succeeded: 1,
        failed: 0,
        created_at: 'x',
        updated_at: 'x',
      },
    };
    const service = fakeService({
      refuse: () => json(200, { batch: { ...bare.batch, results: [{ index: 0, status: 'completed' }] } }),
    });
    await expect(collect(clientOf(service.fetch).creditMany(7, rowsOf(1)))).rejects.toMatchObject({
      code: 'BAD_RESPONSE',
      message: 'result 0 is completed without its payout',
    });
  });

  it('refuses a state that does not fit the call', async () => {
    const state: CreditState = { version: 1, questId: 7, keyPrefix: 'p', batchSize: 2, rowsDone: 0, batchesDone: 0 };
    const c = clientOf(fakeService().fetch);
    await expect(collect(c.creditMany(8, rowsOf(1), { state }))).rejects.toMatchObject({ code: 'INVALID_STATE' });
    await expect(collect(c.creditMany(7, rowsOf(1), { state, batchSize: 3 }))).rejects.toMatchObject({ code: 'INVALID_STATE' });
    await expect(collect(c.creditMany(7, rowsOf(1), { keyPrefix: 'x'.repeat(201) }))).rejects.toMatchObject({
      code: 'INVALID_STATE',
    });
    await expect(collect(c.creditMany(7, rowsOf(1), { batchSize: 0 }))).rejects.toThrow(RangeError);
  });

  it('a refused batch stops the run after the batches before it were reported, naming the batch', async () => {
    const service = fakeService({ refuse: (key) => (key.endsWith(':r4') ? envelope(401, 'INVALID_API_KEY') : undefined) });
    const reports: CreditBatchReport<Row>[] = [];
    const error = await (async () => {
      for await (const r of clientOf(service.fetch).creditMany(7, rowsOf(10), { batchSize: 2, concurrency: 2 })) reports.push(r);
    })().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CreditBatchError);
    expect(error).toMatchObject({ code: 'INVALID_API_KEY', status: 401, retryable: false, batch: { index: 2 } });
    expect((error as CreditBatchError<Row>).batch.rows.map((r) => r.n)).toEqual([4, 5]);
    expect((error as CreditBatchError<Row>).batch.idempotencyKey).toMatch(/:r4$/);
    expect(reports.map((r) => r.batch!.index)).toEqual([0, 1]);
  });

  it("takes rows from an async iterable or a web ReadableStream, and stops with the source's own error", async () => {
    const service = fakeService();
    const stream = new ReadableStream<Row>({
      start(controller) {
        for (const r of rowsOf(3)) controller.enqueue(r);
        controller.close();
      },
    });
    const fromStream = await collect(clientOf(service.fetch).creditMany(7, stream, { batchSize: 2 }));
    expect(fromStream.flatMap((r) => r.results.map((x) => x.status))).toEqual(['credited', 'credited', 'credited']);
    async function* failing() {
      yield* rowsOf(2);
      throw new Error('line 4: unclosed quote');
    }
    const reports: CreditBatchReport<Row>[] = [];
    const error = await (async () => {
      for await (const r of clientOf(service.fetch).creditMany(7, failing(), { batchSize: 2 })) reports.push(r);
    })().catch((e: unknown) => e);
    expect(error).toEqual(new Error('line 4: unclosed quote'));
    expect(reports).toHaveLength(1);
  });

  it('tells the caller about accepted batches and their progress', async () => {
    const events: string[] = [];
    await collect(
      clientOf(fakeService().fetch).creditMany(7, rowsOf(3), {
        batchSize: 2,
        onEvent: (e) => events.push(`${e.type} ${e.batch.index}${e.type === 'progress' ? ` ${e.processed}` : ''}`),
      }),
    );
    expect(events).toEqual(['accepted 0', 'progress 0 2', 'accepted 1', 'progress 1 1']);
  });
});
