import { randomBytes } from 'node:crypto';
import { getAddress } from 'viem';
import { describe, expect, it } from 'vitest';
import { passAddressSchema, toChecksumAddress } from './address.ts';

const CHECKSUMMED = '0x52908400098527886E0F7030069857D2E4169EE7'; // EIP-55 test vector

describe('toChecksumAddress', () => {
  it('checksums whatever letter case arrives', () => {
    expect(toChecksumAddress(CHECKSUMMED.toLowerCase())).toBe(CHECKSUMMED);
    expect(toChecksumAddress(`0x${CHECKSUMMED.slice(2).toUpperCase()}`)).toBe(CHECKSUMMED);
    expect(toChecksumAddress(CHECKSUMMED)).toBe(CHECKSUMMED);
    expect(toChecksumAddress('0xde709f2102306220921060314715629080e2fb77')).toBe('0xde709f2102306220921060314715629080e2fb77');
  });

  it("agrees with viem's getAddress on random addresses, whatever letter case they arrive in", () => {
    for (let n = 0; n < 1000; n++) {
      const hex = randomBytes(20).toString('hex');
      const upper = randomBytes(40);
      // A third lower case, a third upper case, a third each letter's case at random.
      const cased = [...hex].map((c, i) => (n % 3 === 1 || (n % 3 === 2 && upper[i]! & 1) ? c.toUpperCase() : c)).join('');
      expect(toChecksumAddress(`0x${cased}`), cased).toBe(getAddress(`0x${hex}`));
    }
  });

  it('refuses anything that is not 0x and 40 hex digits', () => {
    for (const bad of [
      '',
      '0x',
      '0x1234',
      CHECKSUMMED.slice(2),
      `${CHECKSUMMED}0`,
      `0X${CHECKSUMMED.slice(2)}`,
      `0x${'g'.repeat(40)}`,
      ` ${CHECKSUMMED}`,
    ]) {
      expect(toChecksumAddress(bad), bad).toBeNull();
    }
  });
});

describe('passAddressSchema', () => {
  it('outputs the checksum form and reports malformed input', () => {
    expect(passAddressSchema.parse(CHECKSUMMED.toLowerCase())).toBe(CHECKSUMMED);
    const r = passAddressSchema.safeParse('0x12');
    expect(r.success).toBe(false);
  });
});
