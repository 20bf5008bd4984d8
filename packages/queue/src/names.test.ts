import calculateSlot from 'cluster-key-slot';
import { describe, expect, it } from 'vitest';
import {
  defaultSlotRange,
  membersKey,
  partitionOfQueueName,
  partitionQueueName,
  partitionSlot,
  partitionsKey,
  reconcilerLastRunKey,
  reconcilerLockKey,
} from './names.ts';

/** The slot Redis Cluster hashes a key to: the first non-empty {…} if any, else the whole key. */
function keySlot(key: string): number {
  const open = key.indexOf('{');
  const close = open >= 0 ? key.indexOf('}', open + 1) : -1;
  return calculateSlot(close > open + 1 ? key.slice(open + 1, close) : key);
}

const masterOf = (slot: number, n: number) =>
  Array.from({ length: n }, (_, m) => defaultSlotRange(m, n)).findIndex(([lo, hi]) => slot >= lo && slot <= hi);

describe('key layout', () => {
  it('matches the slot ranges redis-cli --cluster create assigns', () => {
    expect([0, 1, 2].map((m) => defaultSlotRange(m, 3))).toEqual([
      [0, 5460],
      [5461, 10922],
      [10923, 16383],
    ]);
    expect(defaultSlotRange(5, 6)[1]).toBe(16_383);
  });

  it('puts every key of a partition queue in one slot, whatever the prefix', () => {
    for (let p = 0; p < 16; p++) {
      const slots = ['wait', 'active', 'meta', 'events', 'id', 'completed'].map((k) =>
        keySlot(`quest:${partitionQueueName(p)}:${k}`),
      );
      expect(new Set(slots).size, `partition ${p}`).toBe(1);
      expect(slots[0]).toBe(partitionSlot(p));
      expect(keySlot(`other-env:${partitionQueueName(p)}:wait`)).toBe(partitionSlot(p));
    }
  });

  it('spreads 16 partitions 6/5/5 over the masters of a default three-master cluster, on distinct slots', () => {
    const perMaster = [0, 0, 0];
    const slots = new Set<number>();
    for (let p = 0; p < 16; p++) {
      perMaster[masterOf(partitionSlot(p), 3)]!++;
      slots.add(partitionSlot(p));
    }
    expect(perMaster).toEqual([6, 5, 5]);
    expect(slots.size).toBe(16);
  });

  it('keeps the spread even for any partition count up to 256', () => {
    for (const n of [1, 3, 8, 32, 64, 256]) {
      const perMaster = [0, 0, 0];
      for (let p = 0; p < n; p++) perMaster[masterOf(partitionSlot(p), 3)]!++;
      expect(Math.max(...perMaster) - Math.min(...perMaster), `${n} partitions`).toBeLessThanOrEqual(1);
    }
  });

  it('names queues BullMQ accepts and can be read back', () => {
    for (let p = 0; p < 256; p++) {
      expect(partitionQueueName(p)).not.toContain(':');
      expect(partitionOfQueueName(partitionQueueName(p))).toBe(p);
    }
    expect(partitionQueueName(7)).toMatch(/^alloc-p07\{p07-\d+\}$/);
  });

  it('keeps the pool keys on one slot', () => {
    const slots = [membersKey, partitionsKey, reconcilerLockKey, reconcilerLastRunKey].map((k) => keySlot(k('quest')));
    expect(new Set(slots).size).toBe(1);
  });
});
