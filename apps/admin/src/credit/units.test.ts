import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InvalidArgumentError } from 'commander';
import { checkCreditRow, type CreditRowResult, creditBatchKey } from '@quest/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CliError } from '../context.ts';
import { type CreditCsvRow, openCreditCsv } from '../csv.ts';
import { FailedRowsFile } from './failed-rows.ts';
import { creditKeyPrefix } from './keys.ts';
import { MAX_BATCH_SIZE, parseBaseUrl, parseBatchSize } from './options.ts';
import { formatDuration } from './progress.ts';
import { Tally } from './report.ts';

const A = `0x${'ab'.repeat(20)}`;
const B = `0x${'CD'.repeat(20)}`;
const SHA = 'f'.repeat(64);
const PAYOUT = { id: 'pay_1', amount: 1, created_at: '2026-01-01T00:00:00.000Z', account: { pass: A } };

describe("a batch's Idempotency-Key", () => {
  const key = (o: Partial<{ fileSha256: string; questId: number; batchSize: number; index: number }>) => {
    const k = { fileSha256: SHA, questId: 7, batchSize: 5000, index: 0, ...o };
    return creditBatchKey(creditKeyPrefix(k), k.index, k.batchSize);
  };

  it('is deterministic and names the file digest, quest and first row, as every earlier version did', () => {
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
    // Line 3 is blank between rows: refused, with no address for creditMany (so it reports it invalid), and its reason.
    expect(rows).toEqual([
      { line: 2, address: A, points: '5', bytes: expect.any(Number) },
      {
        line: 3,
        address: '',
        points: '',
        cells: { address: '', points: '' },
        reason: 'the line is empty',
        bytes: expect.any(Number),
      },
      { line: 4, address: B, points: '7', bytes: expect.any(Number) },
    ]);
    // Each row's byte position is where it ends in the file, so progress by bytes reaches the size.
    expect(rows[0]!.bytes).toBeGreaterThan(content.indexOf('x,5'));
    expect(rows[0]!.bytes).toBeLessThanOrEqual(content.indexOf('"y, z"'));
    expect(rows[2]!.bytes).toBeLessThanOrEqual(Buffer.byteLength(content));
    const { createHash } = await import('node:crypto');
    expect(sha256).toBe(createHash('sha256').update(Buffer.from(content)).digest('hex'));
    expect(bytes).toBe(size);
  });

  it('names the line where an unclosed quote opens, not the last line of the file', async () => {
    const unclosed = async (name: string, lines: string[], eol = '\n') => {
      const path = await file(name, `\uFEFFaddress,points${eol}${lines.join(eol)}${eol}`);
      const err = (await read(path).catch((e: unknown) => e)) as CliError;
      expect(err).toBeInstanceOf(CliError);
      expect(err.code).toBe('INVALID_CSV');
      return err.message.slice(path.length + 2);
    };
    // Lines 2 and 3 are rows, 4 is blank, the quote opens on 5, and the file goes on to line 8.
    const rows = [`${A},1`, `${A},2`, '', `"${A},3`, `${A},4`, `${A},5`, `${A},6`];
    expect(await unclosed('late.csv', rows)).toBe('line 5: a quote opened on this line is never closed');
    expect(await unclosed('late-crlf.csv', rows, '\r\n')).toBe('line 5: a quote opened on this line is never closed');
    expect(await unclosed('first.csv', [`"${A},1`, `${A},2`])).toBe('line 2: a quote opened on this line is never closed');
    // Multi-byte characters before it (offsets are bytes, not characters).
    expect(await unclosed('utf8.csv', [`${A},1,é€`, `  "${A},2`, `${A},3`])).toBe(
      'line 3: a quote opened on this line is never closed',
    );
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

  it('the failed-rows file gives every row creditMany does not send its file line and reason', async () => {
    // Line 4 is blank, line 6 runs over two lines (its cells are fine, the row is not), line 9 has a bad address.
    const content = `address,points,note\n${A},1,\n${A},2,\n\n${A},3,\n${A},4,"a\nb"\n${A},5,\noops,6,\n`;
    const path = await file('failed.csv', content);
    const { rows } = await read(path);
    // What creditMany reports for rows it refuses itself (its check, its reason); the others as credited.
    const results = rows.map((row): CreditRowResult<CreditCsvRow> => {
      const check = checkCreditRow(row);
      return check.ok
        ? { row, status: 'credited', payout: PAYOUT, replayed: false }
        : { row, status: 'invalid', reason: check.reason };
    });
    const failedFile = new FailedRowsFile(`${path}.failed.csv`);
    await failedFile.write(
      new Tally().addReport({
        batch: null,
        results,
        state: { version: 1, questId: 7, keyPrefix: 'k', batchSize: 10, rowsDone: 0, batchesDone: 0 },
      }),
    );
    expect(await readFile((await failedFile.close())!, 'utf8')).toBe(
      [
        'line,address,points,code,reason',
        '4,,,INVALID_ROW,the line is empty',
        `6,${A},4,INVALID_ROW,the row runs over lines 6–7 (a quoted cell holds a line break)`,
        '9,oops,6,INVALID_ROW,the address is not 0x followed by 40 hexadecimal digits',
        '',
      ].join('\n'),
    );
  });
});
