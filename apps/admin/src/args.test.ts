import { InvalidArgumentError } from 'commander';
import { toChecksumAddress } from '@quest/domain';
import { describe, expect, it } from 'vitest';
import {
  parseActionStatus,
  parseAfterInt,
  parseApiKey,
  parseFeatureAssignments,
  parseInstant,
  parseKeyId,
  parseKeyRef,
  parseLimit,
  parseName,
  parseNonNegativeInt,
  parseOwnerId,
  parsePassAddress,
  parseRowId,
} from './args.ts';

const rejects = (fn: () => unknown) => expect(fn).toThrow(InvalidArgumentError);

describe('parseInstant', () => {
  it('reads dates as UTC midnight and date-times with their zone', () => {
    expect(parseInstant('2025-06-01').toISOString()).toBe('2025-06-01T00:00:00.000Z');
    expect(parseInstant('2025-06-01T12:30:00Z').toISOString()).toBe('2025-06-01T12:30:00.000Z');
    expect(parseInstant('2025-06-01T12:30Z').toISOString()).toBe('2025-06-01T12:30:00.000Z');
    expect(parseInstant('2025-06-01T12:30:00.5+02:00').toISOString()).toBe('2025-06-01T10:30:00.500Z');
    expect(parseInstant('2025-06-01T12:30:00-0130').toISOString()).toBe('2025-06-01T14:00:00.000Z');
    expect(parseInstant('2025-06-01t12:30:00.123456z').toISOString()).toBe('2025-06-01T12:30:00.123Z');
    expect(parseInstant('2024-02-29').toISOString()).toBe('2024-02-29T00:00:00.000Z');
  });

  it('refuses what is not an unambiguous instant', () => {
    rejects(() => parseInstant('tomorrow'));
    rejects(() => parseInstant('2025-06-01T12:00:00')); // no zone: depends on the machine
    rejects(() => parseInstant('2025-02-30'));
    rejects(() => parseInstant('2023-02-29'));
    rejects(() => parseInstant('2025-13-01'));
    rejects(() => parseInstant('2025-06-01T24:00:00Z'));
    rejects(() => parseInstant('2025-06-01T12:60:00Z'));
    rejects(() => parseInstant('1717200000'));
    rejects(() => parseInstant(''));
  });
});

describe('number and id parsers', () => {
  it('accepts non-negative safe integers only', () => {
    expect(parseNonNegativeInt('0')).toBe(0);
    expect(parseNonNegativeInt(' 1500 ')).toBe(1500);
    expect(parseNonNegativeInt('9007199254740991')).toBe(Number.MAX_SAFE_INTEGER);
    for (const bad of ['-1', '1.5', '1e3', '', 'ten', '9007199254740992', '0x10']) rejects(() => parseNonNegativeInt(bad));
  });

  it('accepts row ids in the integer column range', () => {
    expect(parseRowId('1')).toBe(1);
    expect(parseRowId('2147483647')).toBe(2147483647);
    for (const bad of ['0', '-3', '2147483648', 'abc', '1.0']) rejects(() => parseRowId(bad));
  });

  it('checks the shape of owner ids and API keys', () => {
    expect(parseOwnerId(' own_01jf8q4g0x7m3r6v2k9d1n5bta ')).toBe('own_01jf8q4g0x7m3r6v2k9d1n5bta');
    rejects(() => parseOwnerId('key_01jf8q'));
    rejects(() => parseOwnerId('own_'));
    const key = `sk_${'A'.repeat(43)}`;
    expect(parseApiKey(key)).toBe(key);
    rejects(() => parseApiKey('pk_abcdefghijklmnopqrstuvwxyz'));
    rejects(() => parseApiKey('sk_short'));
  });

  it('says which part of the key rule a value breaks', () => {
    const message = (value: string) => {
      try {
        parseApiKey(value);
      } catch (error) {
        return (error as Error).message;
      }
      return 'accepted';
    };
    // 15 characters after sk_: it starts with sk_, so saying "starting with sk_" would be no help.
    expect(message('sk_wrongwrongwrong')).toBe('Expected 16 to 128 characters after sk_ (this has 15).');
    expect(message(`sk_${'a'.repeat(129)}`)).toBe('Expected 16 to 128 characters after sk_ (this has 129).');
    expect(message(`sk_${'a'.repeat(15)}!`)).toBe('Expected only letters, digits, _ and - after sk_.');
    expect(message('pk_abcdefghijklmnopqrstuvwxyz')).toBe('Expected an API key: sk_ followed by 16 to 128 characters.');
    expect(message(`sk_${'a'.repeat(16)}`)).toBe('accepted');
  });
});

describe('parsePassAddress', () => {
  it('accepts any letter case and returns the address trimmed (the database layer stores its EIP-55 form)', () => {
    expect(parsePassAddress(' 0x52908400098527886e0f7030069857d2e4169ee7 ')).toBe('0x52908400098527886e0f7030069857d2e4169ee7');
    expect(parsePassAddress('0xDE709F2102306220921060314715629080E2FB77')).toBe('0xDE709F2102306220921060314715629080E2FB77');
    // A wrong checksum is no reason to refuse (the service re-checksums whatever it receives).
    expect(parsePassAddress('0x52908400098527886E0F7030069857D2E4169Ee7')).toBe('0x52908400098527886E0F7030069857D2E4169Ee7');
  });

  it('refuses anything but 0x and 40 hex digits', () => {
    for (const bad of ['0x1234', '52908400098527886e0f7030069857d2e4169ee7', `0x${'g'.repeat(40)}`, `0x${'a'.repeat(41)}`, '']) {
      rejects(() => parsePassAddress(bad));
    }
  });

  it('accepts exactly what toChecksumAddress accepts', () => {
    const samples = [
      '0x52908400098527886e0f7030069857d2e4169ee7',
      '0x52908400098527886E0F7030069857D2E4169Ee7',
      '0XDE709F2102306220921060314715629080E2FB77',
      ` 0x${'A'.repeat(40)}\t`,
      `0x${'a'.repeat(39)}`,
      `0x${'a'.repeat(39)}z`,
      '0x 52908400098527886e0f7030069857d2e4169ee',
    ];
    for (const sample of samples) {
      let accepted = true;
      try {
        parsePassAddress(sample);
      } catch {
        accepted = false;
      }
      expect(accepted, sample).toBe(toChecksumAddress(sample.trim()) !== null);
    }
  });
});

describe('parseActionStatus and parseName', () => {
  it('accepts the two action statuses in any case', () => {
    expect(parseActionStatus('active')).toBe('active');
    expect(parseActionStatus('DEACTIVATED')).toBe('deactivated');
    rejects(() => parseActionStatus('paused'));
  });

  it('trims names and bounds their length', () => {
    expect(parseName('  Acme ')).toBe('Acme');
    rejects(() => parseName('   '));
    rejects(() => parseName('x'.repeat(201)));
  });
});

describe('parseFeatureAssignments', () => {
  const FEATURES = ['quests', 'campaigns'] as const;

  it('reads one or both assignments', () => {
    expect(parseFeatureAssignments(['quests=off'], FEATURES)).toEqual({ quests: false });
    expect(parseFeatureAssignments(['quests=on', 'Campaigns=OFF'], FEATURES)).toEqual({ quests: true, campaigns: false });
    expect(parseFeatureAssignments(['quests=on', 'quests=on'], FEATURES)).toEqual({ quests: true });
  });

  it('refuses unknown names, bad values, contradictions and nothing at all', () => {
    rejects(() => parseFeatureAssignments([], FEATURES));
    rejects(() => parseFeatureAssignments(['payouts=on'], FEATURES));
    rejects(() => parseFeatureAssignments(['quests=yes'], FEATURES));
    rejects(() => parseFeatureAssignments(['quests'], FEATURES));
    rejects(() => parseFeatureAssignments(['quests=on', 'quests=off'], FEATURES));
  });
});

describe('key references and list paging', () => {
  it('tells a key id from a full key; any sk_ string is a key (to be looked up), anything else is refused', () => {
    expect(parseKeyRef(' key_01jf8q4g0x7m3r6v2k9d1n5bta ')).toEqual({ keyId: 'key_01jf8q4g0x7m3r6v2k9d1n5bta' });
    expect(parseKeyRef('sk_doesnotexist')).toEqual({ apiKey: 'sk_doesnotexist' });
    for (const bad of ['hello', 'key_', 'KEY_abc', 'own_01jf8q4g0x7m3r6v2k9d1n5bta', '']) rejects(() => parseKeyRef(bad));
    expect(parseKeyId('key_abc')).toBe('key_abc');
    rejects(() => parseKeyId('sk_abc'));
  });

  it('takes limits from 1 to 1000 and cursors that are whole numbers', () => {
    expect(parseLimit('1')).toBe(1);
    expect(parseLimit(' 1000 ')).toBe(1000);
    for (const bad of ['0', '1001', '-1', '1.5', 'ten', '']) rejects(() => parseLimit(bad));
    expect(parseAfterInt('9007199254740991')).toBe(Number.MAX_SAFE_INTEGER);
    for (const bad of ['-1', '1e3', '9007199254740992', 'x']) rejects(() => parseAfterInt(bad));
  });
});
