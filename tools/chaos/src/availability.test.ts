import { describe, expect, it } from 'vitest';
import { availability, formatAvailability } from './availability.ts';

/** Decisions every `every` ms from `from` to `to` (exclusive). */
const ticks = (from: number, to: number, every: number) =>
  Array.from({ length: Math.ceil((to - from) / every) }, (_, i) => from + i * every);

const t = { warmupFrom: 0, injectedAt: 10_000, faultEnd: 30_000, loadEnd: 40_000 };

describe('availability through a fault', () => {
  it('is immediate for partitions the fault never touched, and no gap after the heal', () => {
    const a = availability(new Map([[0, ticks(0, 40_000, 10)]]), t);
    expect(a).toEqual({ halfRateMs: 1000, longestGapAfterHealMs: 10 });
  });

  it('measures the slowest partition: one silent for 4 s, then at its old rate', () => {
    const moved = [...ticks(0, 10_000, 10), ...ticks(14_000, 40_000, 10)];
    const a = availability(
      new Map([
        [0, ticks(0, 40_000, 10)],
        [1, moved],
      ]),
      t,
    );
    expect(a.halfRateMs).toBeGreaterThanOrEqual(4_500);
    expect(a.halfRateMs).toBeLessThanOrEqual(5_000);
  });

  it('says never when a partition stays below half its rate for the whole fault, and finds a stall after the heal', () => {
    const slow = [
      ...ticks(0, 10_000, 10),
      ...ticks(10_000, 30_000, 100),
      ...ticks(30_000, 33_000, 10),
      ...ticks(38_000, 40_000, 10),
    ];
    const a = availability(new Map([[0, slow]]), t);
    expect(a.halfRateMs).toBeUndefined();
    expect(a.longestGapAfterHealMs).toBe(5_010);
    expect(formatAvailability(a)).toBe(
      'every partition ≥ 50 % of its rate again after never during the fault; longest gap after the heal 5.0 s',
    );
  });
});
