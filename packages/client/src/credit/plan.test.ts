import { describe, expect, it } from 'vitest';
import { A, B } from '../../test/fetch.ts';
import { batchKey, type PlannedBatch, planBatches } from './plan.ts';
import { checkCreditRow, type CreditRow } from './rows.ts';

type Row = CreditRow & { line: number };
const row = (line: number, address = A, points: number | string = '1'): Row => ({ line, address, points });

async function collect(rows: Row[], batchSize: number, skipRows = 0, firstIndex = 0): Promise<PlannedBatch<Row>[]> {
  const out: PlannedBatch<Row>[] = [];
  for await (const b of planBatches(rows, { batchSize, skipRows, firstIndex })) out.push(b);
  return out;
}

describe('checkCreditRow', () => {
  it('accepts 0x + 40 hex digits in any case and positive safe integers, as numbers or digits', () => {
    expect(checkCreditRow({ address: A, points: '1' })).toEqual({ ok: true, points: 1 });
    expect(checkCreditRow({ address: B, points: '0042' })).toEqual({ ok: true, points: 42 });
    expect(checkCreditRow({ address: A, points: 7 })).toEqual({ ok: true, points: 7 });
    expect(checkCreditRow({ address: A, points: String(Number.MAX_SAFE_INTEGER) })).toEqual({
      ok: true,
      points: Number.MAX_SAFE_INTEGER,
    });
  });

  it('refuses bad addresses and points, with a reason', () => {
    for (const address of ['', '0x123', `${A}0`, A.slice(2), `0X${A.slice(2)}`, `0x${'g'.repeat(40)}`, ` ${A}`]) {
      expect(checkCreditRow({ address, points: '1' }).ok, address).toBe(false);
    }
    for (const points of [
      '',
      '0',
      '-1',
      '1.5',
      '1e3',
      '+5',
      '0x10',
      'ten',
      '9007199254740992',
      '1 000',
      0,
      -3,
      1.5,
      Number.NaN,
      2 ** 53,
    ]) {
      const check = checkCreditRow({ address: A, points });
      expect(check.ok, String(points)).toBe(false);
      if (!check.ok) expect(check.reason).toMatch(/points/);
    }
  });
});

describe('batchKey', () => {
  it('names the prefix and the first row of the batch among valid rows', () => {
    expect(batchKey('p', 3, 5000)).toBe('p:r15000');
    expect(batchKey('p', 0, 2000)).toBe(batchKey('p', 0, 5000));
    expect(batchKey('p', 1, 2000)).not.toBe(batchKey('p', 1, 5000));
  });
});

describe('planBatches', () => {
  it('cuts the valid rows into batches of the given size, in input order', async () => {
    const rows = Array.from({ length: 7 }, (_, i) => row(i + 2, A, String(i + 1)));
    const batches = await collect(rows, 3);
    expect(batches.map((b) => b.index)).toEqual([0, 1, 2]);
    expect(batches.map((b) => b.points)).toEqual([[1, 2, 3], [4, 5, 6], [7]]);
    expect(batches.map((b) => b.rowsTo)).toEqual([3, 6, 7]);
    expect(batches[0]!.rows[0]).toEqual(rows[0]);
    expect(batches.every((b) => b.invalid.length === 0)).toBe(true);
  });

  it('sets invalid rows aside before batching, attached to the batch they precede, and keeps trailing ones', async () => {
    const rows = [row(2), row(3, 'nope'), row(4), row(5), row(6, A, '0'), row(7), row(8, A, 'x')];
    const batches = await collect(rows, 2);
    expect(batches.map((b) => b.rows.map((r) => r.line))).toEqual([[2, 4], [5, 7], []]);
    expect(batches.map((b) => b.invalid.map((i) => [i.row.line, i.position]))).toEqual([[[3, 1]], [[6, 4]], [[8, 6]]]);
    expect(batches.map((b) => b.positions)).toEqual([[0, 2], [3, 5], []]);
  });

  it('gives the same batches whatever invalid rows sit between valid ones', async () => {
    const clean = await collect([row(2), row(3), row(4), row(5)], 2);
    const dirty = await collect([row(2), row(3), row(4, 'bad'), row(5, A, '-1'), row(6), row(7)], 2);
    expect(dirty.map((b) => b.rows.length)).toEqual(clean.map((b) => b.rows.length));
    expect(dirty.map((b) => b.index)).toEqual(clean.map((b) => b.index));
  });

  it('skips the rows a resumed run has done, and numbers on from where it stood', async () => {
    const rows = Array.from({ length: 7 }, (_, i) => row(i + 2));
    const batches = await collect(rows, 2, 4, 2);
    expect(batches.map((b) => [b.index, b.rows.map((r) => r.line), b.positions, b.rowsTo])).toEqual([
      [2, [6, 7], [4, 5], 6],
      [3, [8], [6], 7],
    ]);
  });

  it('yields nothing for no rows, and one exact batch at the boundary', async () => {
    expect(await collect([], 5)).toEqual([]);
    expect(await collect([row(2), row(3)], 2)).toHaveLength(1);
  });
});
