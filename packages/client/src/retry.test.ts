import { describe, expect, it } from 'vitest';
import { backoffMs, DEFAULT_RETRY, isTransientStatus, parseRetryAfter, randomKey, sleep, withDefaults } from './retry.ts';

describe('backoffMs', () => {
  it('doubles from the base delay up to the cap, with equal jitter', () => {
    const top = [1, 2, 3, 4, 5, 6, 7].map((n) => backoffMs(n, undefined, DEFAULT_RETRY, () => 1));
    expect(top).toEqual([250, 500, 1000, 2000, 4000, 8000, 8000]);
    expect(backoffMs(1, undefined, DEFAULT_RETRY, () => 0)).toBe(125);
    expect(backoffMs(3, undefined, DEFAULT_RETRY, () => 0.5)).toBe(750);
  });

  it('never retries before Retry-After, and spreads clients out after it', () => {
    expect(backoffMs(1, 3000, DEFAULT_RETRY, () => 0)).toBe(3000);
    expect(backoffMs(1, 3000, DEFAULT_RETRY, () => 1)).toBe(3600);
    expect(backoffMs(1, 60_000, DEFAULT_RETRY, () => 1)).toBe(61_000);
    // A short Retry-After does not shorten the backoff.
    expect(backoffMs(6, 1000, DEFAULT_RETRY, () => 1)).toBe(8000);
  });
});

describe('parseRetryAfter', () => {
  it('reads delay-seconds and HTTP-dates', () => {
    expect(parseRetryAfter('7')).toBe(7000);
    expect(parseRetryAfter(' 0 ')).toBe(0);
    const now = Date.parse('2026-03-01T12:00:00Z');
    expect(parseRetryAfter('Sun, 01 Mar 2026 12:00:30 GMT', now)).toBe(30_000);
    expect(parseRetryAfter('Sun, 01 Mar 2026 11:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter(null)).toBeUndefined();
    expect(parseRetryAfter('soon')).toBeUndefined();
    expect(parseRetryAfter('-5')).toBeUndefined();
  });
});

describe('small parts', () => {
  it('treats 408, 429 and 5xx as transient, other answers as final', () => {
    expect([408, 429, 500, 502, 503, 504].every(isTransientStatus)).toBe(true);
    expect([200, 202, 400, 401, 404, 409].some(isTransientStatus)).toBe(false);
  });

  it('makes a new random key each time', () => {
    const keys = new Set(Array.from({ length: 100 }, () => randomKey()));
    expect(keys.size).toBe(100);
    expect([...keys][0]).toMatch(/^[0-9a-f]{32}$/);
  });

  it('sleep stops at once when its signal aborts', async () => {
    const controller = new AbortController();
    const waiting = sleep(60_000, controller.signal);
    controller.abort(new Error('stop'));
    await expect(waiting).rejects.toThrow('stop');
    await expect(sleep(1, AbortSignal.abort(new Error('already')))).rejects.toThrow('already');
  });
});

describe('withDefaults', () => {
  it('takes the fields given and keeps the default of a field given as undefined', () => {
    expect(withDefaults(DEFAULT_RETRY, { maxAttempts: 3, baseDelayMs: undefined })).toEqual({ ...DEFAULT_RETRY, maxAttempts: 3 });
    expect(withDefaults(DEFAULT_RETRY, undefined)).toEqual(DEFAULT_RETRY);
  });
});
