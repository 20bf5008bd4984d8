import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { CsvError, type CsvRow, MAX_ROW_CHARS, readCsv } from './read.ts';

const COLUMNS = { required: ['address', 'points'] as const };

async function rowsOf(text: string, columns: Parameters<typeof readCsv>[1] = COLUMNS): Promise<CsvRow<string>[]> {
  const rows: CsvRow<string>[] = [];
  for await (const row of readCsv(Readable.from([text]), columns)) rows.push(row);
  return rows;
}

const brief = (rows: CsvRow<string>[]) =>
  rows.map(({ line, cells, problem }) => ({ line, cells, ...(problem ? { problem } : {}) }));

async function errorOf(text: string): Promise<CsvError> {
  const error = await rowsOf(text).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(CsvError);
  return error as CsvError;
}

describe('readCsv', () => {
  it('numbers rows by file line, the header being line 1; columns by name, any order and case; a BOM and CRLF are fine', async () => {
    const rows = await rowsOf('\uFEFF Points ,note,ADDRESS\r\n5,x,0xa\r\n"7", y ,"0xb"\r\n');
    expect(brief(rows)).toEqual([
      { line: 2, cells: { address: '0xa', points: '5' } },
      { line: 3, cells: { address: '0xb', points: '7' } },
    ]);
    expect(rows[1]!.bytes).toBe(Buffer.byteLength('\uFEFF Points ,note,ADDRESS\r\n5,x,0xa\r\n"7", y ,"0xb"\r\n'));
  });

  it('refuses a blank line between rows as a row of its own, and ignores blank lines at the end', async () => {
    expect(brief(await rowsOf('address,points\n0xa,1\n\n  \n0xb,2\n\n\n'))).toEqual([
      { line: 2, cells: { address: '0xa', points: '1' } },
      { line: 3, cells: { address: '', points: '' }, problem: 'the line is empty' },
      { line: 4, cells: { address: '', points: '' }, problem: 'the line is empty' },
      { line: 5, cells: { address: '0xb', points: '2' } },
    ]);
  });

  it('refuses a row running over several lines, at the line it starts; later rows keep their lines', async () => {
    expect(brief(await rowsOf('address,points,note\n0xa,1,"two\nlines"\n0xb,2,\n'))).toEqual([
      {
        line: 2,
        cells: { address: '0xa', points: '1' },
        problem: 'the row runs over lines 2–3 (a quoted cell holds a line break)',
      },
      { line: 4, cells: { address: '0xb', points: '2' } },
    ]);
  });

  it('gives missing cells as empty, and takes optional columns and aliases', async () => {
    const columns = { required: ['pass'] as const, optional: ['points'] as const, aliases: { pass: ['address'] } };
    expect(brief(await rowsOf('Address\n0xa,extra\n', columns))).toEqual([{ line: 2, cells: { pass: '0xa', points: '' } }]);
  });

  it('refuses a file without its header, naming the columns expected and what line 1 holds', async () => {
    const error = await errorOf('0xa,5\n0xb,6\n');
    expect(error).toMatchObject({ code: 'CSV_HEADER', line: 1 });
    expect(error.message).toBe(
      'line 1: line 1 must be the header naming the columns "address" and "points" (any order; other columns are ignored); it is: 0xa,5',
    );
    expect((await errorOf('\naddress,points\n')).message).toMatch(/; it is empty$/);
    expect((await errorOf('address,points,Address\n')).message).toBe(
      'line 1: the header names the column "address" more than once',
    );
  });

  it('refuses an empty file', async () => {
    expect(await errorOf('')).toMatchObject({ code: 'CSV_EMPTY', line: 1 });
  });

  it('stops at a quote never closed, naming the line where it opens, not the last line', async () => {
    const error = await errorOf('address,points\n0xa,1\n\n"0xb,2\n0xc,3\n0xd,4\n');
    expect(error).toMatchObject({ code: 'CSV_SYNTAX', line: 4 });
    expect(error.message).toBe('line 4: a quote opened on this line is never closed');
    expect((await errorOf('address,points\n"0xa"x,1\n')).message).toBe('line 2: a quoted cell has text after its closing quote');
  });

  it('bounds a row, so an unclosed quote cannot hold the rest of a large file in memory', async () => {
    const error = await errorOf(`address,points\n"0xa,1\n${'0xb,2\n'.repeat(MAX_ROW_CHARS / 4)}`);
    expect(error).toMatchObject({ code: 'CSV_SYNTAX', line: 2 });
    expect(error.message).toMatch(/longer than 65,536 characters/);
  });

  it('streams: rows come before the input ends, and a read error ends the read', async () => {
    const input = new Readable({ read() {} });
    const rows = readCsv(input, COLUMNS);
    input.push('address,points\n0xa,1\n0xb,');
    const first = await rows.next();
    expect(first.value).toMatchObject({ line: 2, cells: { address: '0xa', points: '1' } });
    input.destroy(new Error('disk gone'));
    await expect(rows.next()).rejects.toThrow('disk gone');
  });
});
