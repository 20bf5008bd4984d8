import { describe, expect, it } from 'vitest';
import { healthyPeerLatencies } from './membership.ts';

describe('healthyPeerLatencies', () => {
  it("counts the live peers whose last report says healthy, not this worker's own", () => {
    const reports = [
      ['self', '1|2.0|healthy'],
      ['a', '1|3.5|healthy'],
      ['b', '1|40.0|slow'],
      ['c', '1|9.0|out'],
      ['gone', '1|1.0|healthy'],
      ['d', '1|NaN|healthy'],
      ['e', '1|4.0|healthy'],
    ].flat();
    expect(healthyPeerLatencies(['self', 'a', 'b', 'c', 'd', 'e'], reports, 'self')).toEqual([3.5, 4]);
  });
});
