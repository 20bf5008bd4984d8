import { describe, expect, it } from 'vitest';
import { hasPrefix, newId } from './ids.ts';

describe('newId', () => {
  it('is prefixed, lower-case and sortable by creation time, also within one millisecond', () => {
    const ids = Array.from({ length: 1000 }, () => newId('pay', 1_800_000_000_000));
    expect(ids[0]).toMatch(/^pay_[0-9a-z]{26}$/);
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(1000);
    expect(newId('pay', 1_800_000_000_001) > ids[999]!).toBe(true);
    expect(hasPrefix(ids[0]!, 'pay')).toBe(true);
    expect(hasPrefix(ids[0]!, 'own')).toBe(false);
  });
});
