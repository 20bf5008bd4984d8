import { describe, expect, it } from 'vitest';
import { parseCreditCsv } from './csv.ts';

const A = '0x52908400098527886E0F7030069857D2E4169EE7';
const B = '0xde709f2102306220921060314715629080e2fb77';

describe('parseCreditCsv', () => {
  it('reads address,points rows, skipping a header, blank lines, a BOM and quotes; addresses lower-cased', () => {
    expect(parseCreditCsv(`\uFEFFaddress,points\r\n${A},5\r\n\r\n"${B}", "7"\n`)).toEqual([
      { address: A.toLowerCase(), points: 5 },
      { address: B, points: 7 },
    ]);
  });

  it('refuses the whole file when a row is bad, naming the lines', () => {
    const file = `${A},5\nnot-an-address,1\n${B},0\n${B},1.5\n${A}\n`;
    expect(() => parseCreditCsv(file)).toThrow(
      /4 bad rows \(line 2: the address .*; line 3: points .*; line 4: points .*; line 5: expected two fields.*\); nothing was credited/,
    );
  });

  it('refuses a file with no rows', () => {
    expect(() => parseCreditCsv('address,points\n\n')).toThrow('The file has no rows to credit.');
  });
});
