import { describe, expect, it } from 'vitest';
import { DEFAULT_HEALTH_POLICY, type HealthState, INITIAL_HEALTH, median, nextHealth, type ProbeSample } from './pool-health.ts';

const ok = (latencyMs: number): ProbeSample => ({ ok: true, latencyMs });
const failed = (latencyMs = 1000): ProbeSample => ({ ok: false, latencyMs });

/** Run beats from the initial state; returns every state. */
function run(beats: [ProbeSample, number[]][], from: HealthState = INITIAL_HEALTH) {
  const states: HealthState[] = [];
  let s = from;
  for (const [sample, peers] of beats) {
    s = nextHealth(s, sample, peers);
    states.push(s);
  }
  return states;
}

describe('median', () => {
  it('of odd and even lists, NaN of none', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([])).toBeNaN();
  });
});

describe('nextHealth', () => {
  it('leaves after failAfter failed probes while a healthy peer can take over, rejoins after recoverAfter good ones', () => {
    const s = run([
      [failed(), [1]],
      [failed(), [1]],
      [ok(2), [1]],
      [ok(1), [1]],
    ]);
    expect(s.map((x) => [x.verdict, x.member])).toEqual([
      ['healthy', true],
      ['unreachable', false],
      ['healthy', false],
      ['healthy', true],
    ]);
    expect(DEFAULT_HEALTH_POLICY.failAfter).toBe(2);
  });

  it('never leaves when no healthy peer would take its partitions', () => {
    const s = run([
      [failed(), []],
      [failed(), []],
      [failed(), []],
    ]);
    expect(s.at(-1)).toMatchObject({ verdict: 'unreachable', member: true });
  });

  it('rejoins at once when its peers are gone, even before recovering', () => {
    const out = run([
      [failed(), [1]],
      [failed(), [1]],
    ]).at(-1)!;
    expect(out.member).toBe(false);
    expect(nextHealth(out, failed(), []).member).toBe(true);
  });

  it('is slow only far above its peers for slowAfter beats, not on one spike', () => {
    // One 700 ms probe among 1 ms ones: smoothed, it is over the threshold for two beats only.
    const spike = run([
      [ok(1), [1]],
      [ok(700), [1]],
      [ok(1), [1]],
      [ok(1), [1]],
      [ok(1), [1]],
    ]);
    expect(spike.every((x) => x.member && x.verdict === 'healthy')).toBe(true);
    // 600 ms for every probe while the peer answers in 1 ms: slow on the third beat.
    const slow = run([
      [ok(600), [1]],
      [ok(600), [1]],
      [ok(600), [1]],
    ]);
    expect(slow.map((x) => x.member)).toEqual([true, true, false]);
    expect(slow.at(-1)!.verdict).toBe('slow');
  });

  it('is not slow when everyone is slow, nor under the floor', () => {
    const everyone = run(Array.from({ length: 5 }, () => [ok(600), [500, 700]] as [ProbeSample, number[]]));
    expect(everyone.every((x) => x.member)).toBe(true);
    const floor = run(Array.from({ length: 5 }, () => [ok(50), [0.5]] as [ProbeSample, number[]]));
    expect(floor.every((x) => x.member)).toBe(true);
  });

  it('a slow worker that left stays out while slow and rejoins once its latency is back near its peers', () => {
    const out = run(Array.from({ length: 3 }, () => [ok(600), [1]] as [ProbeSample, number[]])).at(-1)!;
    expect(out.member).toBe(false);
    const still = nextHealth(out, ok(600), [1]);
    expect(still.member).toBe(false);
    const s = run(
      [
        [ok(1), [1]],
        [ok(1), [1]],
        [ok(1), [1]],
        [ok(1), [1]],
        [ok(1), [1]],
      ],
      still,
    );
    expect(s.at(-1)!.member).toBe(true);
    // Never back while the smoothed latency is still over the threshold.
    for (const x of s) if (x.member) expect(x.latencyMs).toBeLessThan(Math.max(100, 10));
  });

  it('counts a probe past its deadline as slow too: alternating slow and timed-out answers still leave', () => {
    const s = run([
      [ok(600), [1]],
      [failed(1000), [1]],
      [ok(600), [1]],
    ]);
    expect(s.map((x) => x.member)).toEqual([true, true, false]);
    expect(s.at(-1)!.verdict).toBe('slow');
  });
});
