import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { CREDIT_REASONS, type CreditCsvRow, checkCreditCells, failedRowsCsv, readCreditCsv } from './credit.ts';

const A = '0x52908400098527886E0F7030069857D2E4169EE7';

async function rowsOf(text: string): Promise<CreditCsvRow[]> {
  const rows: CreditCsvRow[] = [];
  for await (const row of readCreditCsv(Readable.from([text]))) rows.push(row);
  return rows;
}

describe('checkCreditCells', () => {
  const cases: [{ address: string; points: string }, string][] = [
    [{ address: '', points: '1' }, CREDIT_REASONS.noAddress],
    [{ address: '0x12', points: '1' }, CREDIT_REASONS.badAddress],
    [{ address: A, points: '' }, CREDIT_REASONS.noPoints],
    ...['1.5', '-2', '+5', '1e3', '0x10', 'ten'].map((points): [{ address: string; points: string }, string] => [
      { address: A, points },
      CREDIT_REASONS.badPoints,
    ]),
    [{ address: A, points: '0' }, CREDIT_REASONS.zeroPoints],
    [{ address: A, points: '9007199254740992' }, CREDIT_REASONS.hugePoints],
  ];
  it.each(cases)('refuses %o: %s', (cells, reason) => {
    expect(checkCreditCells(cells)).toEqual({ ok: false, reason });
  });

  it('takes an address in any case (lower-cased) and digits', () => {
    expect(checkCreditCells({ address: A, points: '007' })).toEqual({ ok: true, address: A.toLowerCase(), points: 7 });
  });
});

describe('readCreditCsv', () => {
  it('gives every row its file line, its cells as written, and its credit or the reason it is refused', async () => {
    const rows = await rowsOf(`address,points\n${A},5\nnot-an-address,1\n\n${A},0\n`);
    expect(rows.map(({ bytes: _, ...r }) => r)).toEqual([
      { line: 2, address: A, points: '5', credit: { address: A.toLowerCase(), points: 5 } },
      { line: 3, address: 'not-an-address', points: '1', reason: CREDIT_REASONS.badAddress },
      { line: 4, address: '', points: '', reason: 'the line is empty' },
      { line: 5, address: A, points: '0', reason: CREDIT_REASONS.zeroPoints },
    ]);
  });
});

describe('failedRowsCsv', () => {
  it('lists line, cells, code and reason, quoting what needs it', () => {
    expect(
      failedRowsCsv([{ line: 8, address: 'oops', points: '1', code: 'INVALID_ROW', reason: 'the address, as written, is bad' }]),
    ).toBe('line,address,points,code,reason\n8,oops,1,INVALID_ROW,"the address, as written, is bad"\n');
  });
});
