import { DomainError } from '@quest/domain';
import { describe, expect, it } from 'vitest';
import { failedRowsOfUpload, parseAccountCsv, parseCreditCsv } from './csv.ts';

const A = '0x52908400098527886E0F7030069857D2E4169EE7';
const B = '0xde709f2102306220921060314715629080e2fb77';

async function refusal(text: string): Promise<DomainError> {
  const error = await parseCreditCsv(text).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(DomainError);
  return error as DomainError;
}

describe('parseCreditCsv', () => {
  it('reads the rows after the header, columns by name in any order and case; a BOM, CRLF and quotes are fine; addresses lower-cased', async () => {
    expect(await parseCreditCsv(`\uFEFFPoints,Address\r\n5,${A}\r\n"7", "${B}"\r\n\r\n`)).toEqual([
      { address: A.toLowerCase(), points: 5 },
      { address: B, points: 7 },
    ]);
  });

  it('refuses the whole file when a row is bad, naming file lines (the header is line 1) and the reasons', async () => {
    const error = await refusal(`address,points\n${A},5\nnot-an-address,1\n\n${B},0\n${B},1.5\n${A}\n`);
    expect(error.code).toBe('VALIDATION_FAILED');
    expect(error.message).toBe(
      'The file has 5 bad rows (line 3: the address is not 0x followed by 40 hexadecimal digits; line 4: the line is empty; ' +
        'line 5: the points must be at least 1; line 6: the points are not a whole number (digits only); ' +
        'line 7: the points are missing); nothing was credited.',
    );
    expect(error.details).toEqual([
      { line: 3, reason: 'the address is not 0x followed by 40 hexadecimal digits' },
      { line: 4, reason: 'the line is empty' },
      { line: 5, reason: 'the points must be at least 1' },
      { line: 6, reason: 'the points are not a whole number (digits only)' },
      { line: 7, reason: 'the points are missing' },
    ]);
  });

  it('refuses a file without its header, as quest-admin does, and names the line of an unclosed quote', async () => {
    const headless = await refusal(`${A},5\n${B},7\n`);
    expect(headless.code).toBe('VALIDATION_FAILED');
    expect(headless.message).toMatch(
      /^The file cannot be read: line 1: line 1 must be the header naming the columns "address" and "points"/,
    );
    expect((await refusal(`address,points\n${A},1\n"${B},2\n${A},3\n`)).message).toBe(
      'The file cannot be read: line 3: a quote opened on this line is never closed; nothing was credited.',
    );
  });

  it('refuses a file with no rows', async () => {
    expect((await refusal('address,points\n\n')).message).toBe('The file has no rows to credit.');
  });
});

describe('failedRowsOfUpload', () => {
  it('names each rejected row by its line in the uploaded file, as quest-admin does, with code and reason', async () => {
    const upload = `address,points\n${A},5\n${B},7\n${A},9\n`;
    const items = await parseCreditCsv(upload);
    // The service rejected item 1 (the second row): it is line 3 of the file.
    const csv = failedRowsOfUpload([
      { index: 1, address: items[1]!.address, points: items[1]!.points, code: 'ACCOUNT_NOT_FOUND' },
    ]);
    const [header, row] = csv.trim().split('\n');
    expect(header).toBe('line,address,points,code,reason');
    expect(row).toBe(`3,${B},7,ACCOUNT_NOT_FOUND,No account exists for this pass address.`);
    expect(upload.split('\n')[Number(row!.split(',')[0]) - 1]).toBe(`${B},7`);
  });
});

describe('parseAccountCsv', () => {
  it('reads the pass (or address) column by the header, with file lines; a blank line between rows is an invalid row', async () => {
    expect(await parseAccountCsv(`note,Pass\nx,${A}\n\ny,not-an-address\n\n`)).toEqual([
      { line: 2, value: A },
      { line: 3, value: '' },
      { line: 4, value: 'not-an-address' },
    ]);
    expect(await parseAccountCsv(`address\n${B},extra\n`)).toEqual([{ line: 2, value: B }]);
    await expect(parseAccountCsv(`${A}\n`)).rejects.toMatchObject({ code: 'VALIDATION_FAILED' });
  });
});
