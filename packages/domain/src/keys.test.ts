import { describe, expect, it } from 'vitest';
import { newId } from './ids.ts';
import {
  displayPrefix,
  generateApiKey,
  hashApiKey,
  idempotentRequestKey,
  isIdempotentRequestKey,
  isWellFormedApiKey,
} from './keys.ts';

describe('API keys', () => {
  it('are sk_ + 43 base64url characters, random, and well-formed', () => {
    const a = generateApiKey();
    const b = generateApiKey();
    expect(a).toMatch(/^sk_[A-Za-z0-9_-]{43}$/);
    expect(a).not.toBe(b);
    expect(isWellFormedApiKey(a)).toBe(true);
  });

  it('refuses keys without the sk_ prefix or with odd characters', () => {
    for (const bad of [
      undefined,
      '',
      'sk_',
      'pk_abcdefghijklmnopqrstuvwxyz',
      'sk_short',
      'sk_has space inside_123456',
      'SK_abcdefghijklmnopqrstuv',
    ]) {
      expect(isWellFormedApiKey(bad), String(bad)).toBe(false);
    }
  });

  it('hash to a stable 32-byte SHA-256 digest, different per key', () => {
    const key = generateApiKey();
    expect(hashApiKey(key)).toHaveLength(32);
    expect(hashApiKey(key).equals(hashApiKey(key))).toBe(true);
    expect(hashApiKey(key).equals(hashApiKey(generateApiKey()))).toBe(false);
    // Known answer, computed independently (Python hashlib): SHA-256 of the key's UTF-8 bytes.
    expect(hashApiKey('sk_test').toString('hex')).toBe('12b2820cf1639904311da5771de1e5bb65c77073fdc7c555df395942df42896b');
    expect(displayPrefix(key)).toBe(key.slice(0, 7));
  });
});

describe('idempotentRequestKey', () => {
  it('is deterministic and scoped by owner, quest, key and kind', () => {
    const k = idempotentRequestKey('own_a', 1, 'order-1', 'alc');
    expect(k).toMatch(/^alc_k[A-Za-z0-9_-]{32}$/);
    expect(idempotentRequestKey('own_a', 1, 'order-1', 'alc')).toBe(k);
    expect(
      new Set([
        k,
        idempotentRequestKey('own_b', 1, 'order-1', 'alc'),
        idempotentRequestKey('own_a', 2, 'order-1', 'alc'),
        idempotentRequestKey('own_a', 1, 'order-2', 'alc'),
        idempotentRequestKey('own_a', 1, 'order-1', 'bat').replace('bat_', 'alc_'),
      ]).size,
    ).toBe(5);
    // No ambiguity from concatenation: ("a", 11) and ("a1", 1) differ.
    expect(idempotentRequestKey('own_a', 11, 'x', 'alc')).not.toBe(idempotentRequestKey('own_a1', 1, 'x', 'alc'));
  });
});

describe('isIdempotentRequestKey', () => {
  it('tells derived keys from generated ones', () => {
    expect(isIdempotentRequestKey(idempotentRequestKey('own_a', 1, 'x', 'alc'))).toBe(true);
    expect(isIdempotentRequestKey(idempotentRequestKey('own_a', 1, 'x', 'bat'))).toBe(true);
    for (let i = 0; i < 100; i++) expect(isIdempotentRequestKey(newId('alc'))).toBe(false);
    // Far-future timestamps still start with a digit: a ULID's first character encodes the top 3 bits.
    expect(isIdempotentRequestKey(newId('alc', 2 ** 48 - 1))).toBe(false);
  });
});
