import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InvalidArgumentError } from 'commander';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CliError } from '../context.ts';
import { type CreditCsvRow, openCreditCsv } from '../csv.ts';
import { backoffMs, itemIndexFromDetails } from './api.ts';
import { MAX_BATCH_SIZE, parseBaseUrl, parseBatchSize } from './options.ts';
import { batchIdempotencyKey, type PlannedBatch, planBatches } from './plan.ts';
import { formatDuration } from './progress.ts';
import { checkCreditRow, mergeByLine } from './rows.ts';

const A = `0x${'ab'.repeat(20)}`;
const B = `0x${'CD'.repeat(20)}`;
const SHA = 'f'.repeat(64);

async function* from(rows: CreditCsvRow[]): AsyncGenerator<CreditCsvRow> {
  yield* rows;
}
async function collect(rows: CreditCsvRow[], size: number): Promise<PlannedBatch[]> {
  const out: PlannedBatch[] = [];
  for await (const b of planBatches(from(rows), size)) out.push(b);
  return out;
}
const row = (line: number, address = A, points = '1'): CreditCsvRow => ({ line, address, points });

describe('checkCreditRow', () => {
  it('accepts 0x + 40 hex digits in any case and positive safe integers', () => {
    expect(checkCreditRow({ address: A, points: '1' })).toEqual({ ok: true, points: 1 });
    expect(checkCreditRow({ address: B, points: '0042' })).toEqual({ ok: true, points: 42 });
    expect(checkCreditRow({ address: A, points: String(Number.MAX_SAFE_INTEGER) })).toEqual({
      ok: true,
      points: Number.MAX_SAFE_INTEGER,
    });
  });

  it('refuses bad addresses and points, with a reason', () => {
    for (const address of ['', '0x123', `${A}0`, A.slice(2), `0X${A.slice(2)}`, `0x${'g'.repeat(40)}`, ` ${A}`]) {
      expect(checkCreditRow({ address, points: '1' }).ok, address).toBe(false);
    }
    for (const points of ['', '0', '-1', '1.5', '1e3', '+5', '0x10', 'ten', '9007199254740992', '1 000']) {
      const check = checkCreditRow({ address: A, points });
      expect(check.ok, points).toBe(false);
      if (!check.ok) expect(check.reason).toMatch(/points/);
    }
  });
});

describe('batchIdempotencyKey', () => {
  const key = (o: Partial<Parameters<typeof batchIdempotencyKey>[0]>) =>
    batchIdempotencyKey({ fileSha256: SHA, questId: 7, batchSize: 5000, index: 0, ...o });

  it('is deterministic and names the file digest, quest and first row', () => {
    expect(key({ index: 3 })).toBe(key({ index: 3 }));
    expect(key({ index: 3 })).toBe(`quest-admin-credit-v1:${SHA}:q7:r15000`);
    expect(key({}).length).toBeLessThanOrEqual(255); // the API's limit
  });

  it('differs by file, quest and batch', () => {
    const keys = new Set([key({}), key({ index: 1 }), key({ questId: 8 }), key({ fileSha256: 'e'.repeat(64) })]);
    expect(keys.size).toBe(4);
  });

  it('gives batch 1 the same key for any batch size, so a re-run with another size collides instead of re-crediting', () => {
    expect(key({ batchSize: 2000 })).toBe(key({ batchSize: 5000 }));
    expect(key({ batchSize: 2000, index: 1 })).not.toBe(key({ batchSize: 5000, index: 1 }));
  });
});

describe('planBatches', () => {
  it('cuts the valid rows into batches of the given size, in file order', async () => {
    const rows = Array.from({ length: 7 }, (_, i) => row(i + 2, A, String(i + 1)));
    const batches = await collect(rows, 3);
    expect(batches.map((b) => b.index)).toEqual([0, 1, 2]);
    expect(batches.map((b) => b.items.map((i) => i.points))).toEqual([[1, 2, 3], [4, 5, 6], [7]]);
    expect(batches[0]!.items[0]).toEqual({ line: 2, address: A, points: 1, pointsText: '1' });
    expect(batches.every((b) => b.invalid.length === 0)).toBe(true);
  });

  it('sets invalid rows aside before batching, attached to the batch they precede, and keeps trailing ones', async () => {
    const rows = [row(2), row(3, 'nope'), row(4), row(5), row(6, A, '0'), row(7), row(8, A, 'x')];
    const batches = await collect(rows, 2);
    expect(batches.map((b) => b.items.map((i) => i.line))).toEqual([[2, 4], [5, 7], []]);
    expect(batches.map((b) => b.invalid.map((i) => [i.line, i.code]))).toEqual([
      [[3, 'INVALID_ROW']],
      [[6, 'INVALID_ROW']],
      [[8, 'INVALID_ROW']],
    ]);
    expect(batches[2]!.invalid[0]).toEqual({ line: 8, address: A, points: 'x', code: 'INVALID_ROW' });
  });

  it('gives the same batches whatever invalid rows sit between valid ones', async () => {
    const clean = await collect([row(2), row(3), row(4), row(5)], 2);
    const dirty = await collect([row(2), row(3), row(4, 'bad'), row(5, A, '-1'), row(6), row(7)], 2);
    expect(dirty.map((b) => b.items.length)).toEqual(clean.map((b) => b.items.length));
    expect(dirty.map((b) => b.index)).toEqual(clean.map((b) => b.index));
  });

  it('yields nothing for no rows, and one exact batch at the boundary', async () => {
    expect(await collect([], 5)).toEqual([]);
    const exact = await collect([row(2), row(3)], 2);
    expect(exact).toHaveLength(1);
  });
});

describe('option parsers', () => {
  it('--batch-size is an integer from 1 to 10,000', () => {
    expect(parseBatchSize('1')).toBe(1);
    expect(parseBatchSize(' 5000 ')).toBe(5000);
    expect(parseBatchSize(String(MAX_BATCH_SIZE))).toBe(10_000);
    for (const bad of ['0', '10001', '-1', '1.5', 'abc', '', '1e3'])
      expect(() => parseBatchSize(bad)).toThrow(InvalidArgumentError);
  });

  it('--base-url is http(s), without a trailing slash', () => {
    expect(parseBaseUrl('http://127.0.0.1:3000/')).toBe('http://127.0.0.1:3000');
    expect(parseBaseUrl('https://api.example.com/rewards/')).toBe('https://api.example.com/rewards');
    for (const bad of ['ftp://x', 'localhost:3000', '', 'http://x/?a=1'])
      expect(() => parseBaseUrl(bad)).toThrow(InvalidArgumentError);
  });
});

describe('small helpers', () => {
  it('backoff grows exponentially, is capped and jittered, and honours Retry-After', () => {
    const mid = () => 0.5;
    expect([1, 2, 3, 4, 5, 6, 7].map((n) => backoffMs(n, 0, () => 1))).toEqual([250, 500, 1000, 2000, 4000, 8000, 8000]);
    expect(backoffMs(1, 0, () => 0)).toBe(125);
    expect(backoffMs(2, 0, mid)).toBe(375);
    expect(backoffMs(1, 1000, mid)).toBe(1000);
    expect(backoffMs(1, 120_000, mid)).toBe(30_000);
  });

  it('merges failed rows by line', () => {
    const f = (line: number) => ({ line, address: A, points: '1', code: String(line) });
    expect(mergeByLine([f(2), f(9)], [f(3), f(4), f(10)]).map((r) => r.line)).toEqual([2, 3, 4, 9, 10]);
    expect(mergeByLine([], [f(1)]).map((r) => r.line)).toEqual([1]);
  });

  it('finds the item a VALIDATION_FAILED answer names', () => {
    expect(itemIndexFromDetails([{ location: 'body', path: 'allocations.37.address' }])).toBe(37);
    expect(itemIndexFromDetails([{ path: 'allocations' }, { path: 'allocations.2' }])).toBe(2);
    expect(itemIndexFromDetails([{ path: 'limit' }])).toBeUndefined();
    expect(itemIndexFromDetails(undefined)).toBeUndefined();
  });

  it('formats durations', () => {
    expect(formatDuration(0)).toBe('0s');
    expect(formatDuration(59_400)).toBe('59s');
    expect(formatDuration(61_000)).toBe('1m01s');
    expect(formatDuration(3_720_000)).toBe('1h02m');
    expect(formatDuration(Number.POSITIVE_INFINITY)).toBe('?');
  });
});

describe('openCreditCsv', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'credit-csv-'));
  });
  afterAll(async () => rm(dir, { recursive: true, force: true }));

  const file = async (name: string, content: string) => {
    const path = join(dir, name);
    await writeFile(path, content);
    return path;
  };
  const read = async (path: string) => {
    const csv = await openCreditCsv(path);
    const rows: CreditCsvRow[] = [];
    for await (const r of csv.rows) rows.push(r);
    return { rows, sha256: csv.sha256(), bytes: csv.bytesRead(), size: csv.size };
  };

  it('reads address and points by header name, with line numbers, and hashes every byte', async () => {
    const content = `\uFEFFnote,Points,ADDRESS\r\nx,5,${A}\r\n\r\n"y, z", 7 ,"${B}"\r\n`;
    const path = await file('a.csv', content);
    const { rows, sha256, bytes, size } = await read(path);
    expect(rows).toEqual([
      { line: 2, address: A, points: '5', bytes: expect.any(Number) },
      { line: 4, address: B, points: '7', bytes: expect.any(Number) },
    ]);
    // Each row's byte position is where it ends in the file, so progress by bytes reaches the size.
    expect(rows[0]!.bytes).toBeGreaterThan(content.indexOf('x,5'));
    expect(rows[0]!.bytes).toBeLessThanOrEqual(content.indexOf('"y, z"'));
    expect(rows[1]!.bytes).toBeLessThanOrEqual(Buffer.byteLength(content));
    const { createHash } = await import('node:crypto');
    expect(sha256).toBe(createHash('sha256').update(Buffer.from(content)).digest('hex'));
    expect(bytes).toBe(size);
  });

  it('refuses a file without the header, an empty file, a malformed CSV and a missing file', async () => {
    const fails = async (path: string, code: string) => {
      const err = await read(path).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(CliError);
      expect((err as CliError).code).toBe(code);
    };
    await fails(await file('b.csv', `pass,points\n${A},1\n`), 'INVALID_CSV');
    await fails(await file('c.csv', ''), 'INVALID_CSV');
    await fails(await file('d.csv', `address,points\n"${A},1\n`), 'INVALID_CSV');
    await fails(join(dir, 'missing.csv'), 'FILE_NOT_READABLE');
  });
});
