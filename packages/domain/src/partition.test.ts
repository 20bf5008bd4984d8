import { describe, expect, it } from 'vitest';
import { assignPartitions, partitionOf } from './partition.ts';

describe('partitionOf', () => {
  it('spreads dense quest ids exactly evenly', () => {
    const counts = new Array(16).fill(0);
    for (let id = 1; id <= 1600; id++) counts[partitionOf(id, 16)]++;
    expect(counts).toEqual(new Array(16).fill(100));
  });

  it('is stable and refuses nonsense', () => {
    expect(partitionOf(37, 16)).toBe(partitionOf(37, 16));
    expect(() => partitionOf(-1, 16)).toThrow(RangeError);
    expect(() => partitionOf(1.5, 16)).toThrow(RangeError);
    expect(() => partitionOf(1, 0)).toThrow(RangeError);
  });
});

describe('assignPartitions', () => {
  const all = (members: string[], partitions: number) => members.map((m) => assignPartitions(members, m, partitions));

  it('gives every partition exactly one owner, in shares differing by at most one', () => {
    for (const n of [1, 2, 3, 4, 5, 16, 17]) {
      const members = Array.from({ length: n }, (_, i) => `w${i}`);
      const shares = all(members, 16);
      expect(shares.flat().sort((a, b) => a - b)).toEqual(Array.from({ length: 16 }, (_, p) => p).slice(0, 16));
      const sizes = shares.map((s) => s.length);
      expect(Math.max(...sizes) - Math.min(...sizes)).toBeLessThanOrEqual(1);
    }
  });

  it('agrees whatever order each member sees the list in', () => {
    expect(assignPartitions(['b', 'a', 'c'], 'a', 6)).toEqual(assignPartitions(['c', 'b', 'a'], 'a', 6));
  });

  it('gives nothing to a process that is not a member', () => {
    expect(assignPartitions(['a', 'b'], 'z', 8)).toEqual([]);
  });
});
