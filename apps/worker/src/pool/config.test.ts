import { describe, expect, it } from 'vitest';
import { loadWorkerConfig } from '../env.ts';
import { MIN_TTL_HEARTBEATS, POOL_DEFAULTS, poolConfig } from './config.ts';

describe('the pool config', () => {
  it('derives every period from the timing', () => {
    expect(poolConfig()).toEqual({
      ...POOL_DEFAULTS,
      stalledIntervalMs: 1000,
      commandTimeoutMs: 500,
      fenceAfterMs: 2500,
      idleCheckMs: 2000,
    });
    expect(poolConfig({ heartbeatMs: 200, memberTtlMs: 500, lockDurationMs: 2000 })).toMatchObject({
      stalledIntervalMs: 500,
      commandTimeoutMs: 100,
      fenceAfterMs: 400,
      idleCheckMs: 400,
    });
  });

  it('fences after a renewal retried at once and before the TTL, at the shortest TTL the worker accepts', () => {
    for (const heartbeatMs of [100, 1000, 7000]) {
      const memberTtlMs = MIN_TTL_HEARTBEATS * heartbeatMs;
      const c = poolConfig({ heartbeatMs, memberTtlMs });
      expect(c.fenceAfterMs).toBeLessThan(memberTtlMs);
      // A renewal at the next heartbeat that times out and is retried at once still lands first.
      expect(c.fenceAfterMs).toBeGreaterThanOrEqual(heartbeatMs + 2 * c.commandTimeoutMs);
    }
  });

  it("is where the worker's environment takes its defaults from", () => {
    const env = loadWorkerConfig({ DATABASE_URL: 'postgres://localhost/quest', REDIS_URL: 'redis://localhost:6379' });
    expect({
      heartbeatMs: env.WORKER_HEARTBEAT_MS,
      memberTtlMs: env.WORKER_MEMBER_TTL_MS,
      lockDurationMs: env.WORKER_LOCK_MS,
      probeTimeoutMs: env.WORKER_PROBE_TIMEOUT_MS,
      stallRestartMs: env.WORKER_STALL_RESTART_MS,
    }).toEqual(POOL_DEFAULTS);
  });
});
