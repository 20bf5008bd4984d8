import { describe, expect, it } from 'vitest';
import { jsonDepthExceeds } from './json-body.ts';

describe('jsonDepthExceeds', () => {
  it('counts nested arrays and objects', () => {
    expect(jsonDepthExceeds('{"a":[{"b":1}]}', 3)).toBe(false);
    expect(jsonDepthExceeds('{"a":[{"b":[1]}]}', 3)).toBe(true);
    expect(jsonDepthExceeds('['.repeat(33), 32)).toBe(true);
    expect(jsonDepthExceeds('[]'.repeat(1000), 1)).toBe(false);
  });

  it('ignores brackets inside strings, escaped quotes included', () => {
    expect(jsonDepthExceeds(JSON.stringify({ s: '[[[[{{{{' }), 1)).toBe(false);
    expect(jsonDepthExceeds(JSON.stringify({ s: 'a"[[[[\\' }), 1)).toBe(false);
    expect(jsonDepthExceeds(`${JSON.stringify({ s: 'a"' })}[[`, 1)).toBe(true);
  });
});
