import { describe, expect, it } from 'vitest';
import { jsonRequested } from './main.ts';

describe('jsonRequested', () => {
  it('sees --json among the options, not after the -- that ends them', () => {
    expect(jsonRequested(['owner', 'list', '--json'])).toBe(true);
    expect(jsonRequested(['--json', 'launch'])).toBe(true);
    expect(jsonRequested(['owner', 'list'])).toBe(false);
    expect(jsonRequested(['features', 'set', '--', '--json'])).toBe(false);
    expect(jsonRequested(['--jsonx'])).toBe(false);
  });
});
