import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  blockedAddressReason,
  checkWebhookUrl,
  DEFAULT_RETRY_SCHEDULE,
  decryptSecret,
  encryptSecret,
  newWebhookSecret,
  retryDelayMs,
  withinRetryWindow,
} from './webhooks.ts';

describe('blockedAddressReason', () => {
  it('allows global unicast addresses only', () => {
    for (const ok of ['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c', '8.8.8.8'])
      expect(blockedAddressReason(ok)).toBeNull();
    for (const bad of [
      '127.0.0.1',
      '10.1.2.3',
      '172.16.0.1',
      '192.168.1.1',
      '169.254.169.254', // cloud metadata
      '100.64.0.1',
      '0.0.0.0',
      '::1',
      '::',
      'fe80::1',
      'fd00:ec2::254',
      '::ffff:127.0.0.1', // IPv4-mapped loopback
      '::ffff:169.254.169.254',
      '::127.0.0.1', // IPv4-compatible (deprecated): refused whatever it carries
      '::a9fe:a9fe',
      '::808:808', // ::8.8.8.8 as URLs and resolvers write it
      '::1:0:0:0', // not ::/96: reserved, refused by its range
      '224.0.0.1',
      'not-an-ip',
    ]) {
      expect(blockedAddressReason(bad), bad).not.toBeNull();
    }
  });
});

describe('checkWebhookUrl', () => {
  const strict = { allowPrivate: false };
  const lax = { allowPrivate: true };
  it('wants https, no credentials, no private literal or localhost, unless private URLs are allowed', () => {
    expect(checkWebhookUrl('https://example.com/hook', strict).ok).toBe(true);
    expect(checkWebhookUrl('https://example.com./hook', strict).ok).toBe(true);
    for (const bad of [
      'http://example.com/hook',
      'https://user:pw@example.com/',
      'https://127.0.0.1/',
      'https://[::1]/',
      'https://169.254.169.254/latest',
      'https://localhost:8080/',
      'https://a.localhost/',
      'https://localhost./',
      'https://LocalHost.:8443/',
      'https://a.localhost./',
      'https://[::127.0.0.1]/',
      'https://[::a9fe:a9fe]/latest',
      'https://127.0.0.1./',
      'ftp://example.com/',
      'not a url',
      `https://example.com/${'a'.repeat(2100)}`,
    ]) {
      expect(checkWebhookUrl(bad, strict).ok, bad).toBe(false);
    }
    expect(checkWebhookUrl('http://127.0.0.1:9000/hook', lax).ok).toBe(true);
    expect(checkWebhookUrl('ftp://127.0.0.1/', lax).ok).toBe(false);
  });
});

describe('the retry schedule', () => {
  it('doubles from the base, capped, with half of each pause random', () => {
    const s = { baseMs: 1000, maxMs: 10_000, windowMs: 60_000 };
    expect([1, 2, 3, 4, 5, 6].map((f) => retryDelayMs(f, s, 0))).toEqual([500, 1000, 2000, 4000, 5000, 5000]);
    expect([1, 2, 3, 4, 5, 6].map((f) => retryDelayMs(f, s, 0.999999))).toEqual([1000, 2000, 4000, 8000, 10_000, 10_000]);
  });

  it('by default spans about 3 days in about 20 attempts', () => {
    let elapsed = 0;
    let attempts = 1;
    const first = new Date(0);
    while (withinRetryWindow(first, new Date(elapsed), DEFAULT_RETRY_SCHEDULE)) {
      elapsed += retryDelayMs(attempts, DEFAULT_RETRY_SCHEDULE, 0.5);
      attempts++;
    }
    expect(attempts).toBeGreaterThan(12);
    expect(attempts).toBeLessThan(30);
    expect(elapsed).toBeGreaterThan(3 * 86_400_000 - 6 * 3_600_000);
  });
});

describe('secrets at rest', () => {
  it('round-trips under the key and context, and fails under another key or context', () => {
    const key = randomBytes(32);
    const secret = newWebhookSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const stored = encryptSecret(secret, key, 'whe_1');
    expect(stored.includes(Buffer.from(secret))).toBe(false);
    expect(decryptSecret(stored, key, 'whe_1')).toBe(secret);
    expect(() => decryptSecret(stored, randomBytes(32), 'whe_1')).toThrow();
    expect(() => decryptSecret(stored, key, 'whe_2')).toThrow();
  });
});
