import { describe, expect, test } from 'vitest';
import { CREDIT_BOUND_MS, HEALTH_BOUND_MS, RESOLVE_BOUND_MS, runScenario, SMALL_LOAD } from '../src/run.ts';
import { SCENARIOS } from '../src/scenarios/index.ts';

/**
 * The fast subset of `npm run chaos`: three faults under small load, each on its own private
 * PostgreSQL and Redis (never the shared servers), with every invariant checked afterwards. The
 * scenario waits for conditions (answers, decisions, health) within the suite's contract bounds
 * (RESOLVE_BOUND_MS, CREDIT_BOUND_MS, HEALTH_BOUND_MS); the test timeout only covers those bounds
 * plus start-up, so a broken service fails with its violations listed instead of hanging.
 */
const FAST = ['pg-restart-fast', 'redis-flushall', 'worker-zombie'];
const TIMEOUT = 60_000 + RESOLVE_BOUND_MS + Math.max(CREDIT_BOUND_MS, HEALTH_BOUND_MS);

describe('fault suite (fast subset)', () => {
  for (const scenario of SCENARIOS.filter((s) => FAST.includes(s.name))) {
    test(`${scenario.fault}: no invariant violated`, { timeout: TIMEOUT }, async () => {
      const result = await runScenario(scenario, SMALL_LOAD, () => {});
      expect(result.requests, 'requests sent').toBeGreaterThan(0);
      expect(result.violations).toEqual([]);
    });
  }
});
