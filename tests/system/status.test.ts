import { describe, expect, vi } from 'vitest';
import { partitionOf } from '@quest/domain';
import { post, systemTest, waitForPool } from '@quest/testing';
import { jsonOf, runCli, spawnCli } from '../../apps/admin/test/helpers.ts';

// No worker at first, a short wait: the first request is answered 202 and stays queued.
const test = systemTest({
  workers: 0,
  partitions: 4,
  env: { ALLOCATION_WAIT_MS: '200', RECONCILER_INTERVAL_MS: '200' },
});

describe('quest-admin status', () => {
  test('shows the queued work, then the pool that owns every partition once and the reconciler run', async ({
    system,
    owner,
    quest,
    accounts,
  }) => {
    const status = async () => {
      const env = { DATABASE_URL: system.db.url, REDIS_URL: system.redis.url, QUEUE_PREFIX: system.redis.prefix };
      // In this process (polled below); the other tests run the real launcher.
      const result = await runCli(['status', '--json'], env);
      expect(result.code, result.stderr).toBe(0);
      return jsonOf(result);
    };
    const queued = await post(system, `/quests/${quest}`, { points: 1, address: accounts[0] }, { 'x-api-key': owner.apiKey });
    expect(queued.status).toBe(202);
    const partition = partitionOf(quest, 4);

    const before = await status();
    expect(before.partitions).toBe(4);
    expect(before.pool.members).toEqual([]);
    expect(before.queues).toHaveLength(4);
    expect(before.queues[partition]).toMatchObject({ partition, waiting: 1, active: 0 });
    expect(before.queues[partition].oldestWaitSeconds).toBeGreaterThanOrEqual(0);
    expect(before.pending.requests).toMatchObject({ count: 1, olderThan10m: 0 });
    expect(before.pending.requests.oldestAgeSeconds).toBeGreaterThanOrEqual(0);
    expect(before.pending.batches).toMatchObject({ count: 0, oldestCreatedAt: null });
    expect(before.reconciler).toEqual({ lastRun: null });

    await Promise.all([system.startWorker(), system.startWorker()]);
    await waitForPool(system, 2);
    await vi.waitFor(
      async () => {
        const after = await status();
        expect(after.pool.members).toHaveLength(2);
        const owned = after.pool.members
          .flatMap((m: { partitions: number[] }) => m.partitions)
          .sort((a: number, b: number) => a - b);
        expect(owned).toEqual([0, 1, 2, 3]);
        expect(after.queues[partition]).toMatchObject({ waiting: 0, oldestWaitSeconds: null });
        expect(after.pending.requests.count).toBe(0);
        expect(after.reconciler.lastRun).toMatchObject({ at: expect.any(String), member: expect.any(String) });
      },
      { timeout: 30_000, interval: 200 },
    );
  });

  test('text output names the members and partitions', async ({ system }) => {
    const env = { DATABASE_URL: system.db.url, REDIS_URL: system.redis.url, QUEUE_PREFIX: system.redis.prefix };
    const result = await spawnCli(['status'], env);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^pool\n/);
    expect(result.stdout).toMatch(/partition\s+owner\s+waiting\s+active\s+oldest wait s/);
    expect(result.stdout).toMatch(/reconciler\n\s+last run/);
  });

  test('a Redis that cannot be reached is one readable line and exit 1', async ({ system }) => {
    const env = { DATABASE_URL: system.db.url, REDIS_URL: 'redis://127.0.0.1:1', QUEUE_PREFIX: system.redis.prefix };
    const result = await spawnCli(['status', '--json'], env);
    expect(result.code).toBe(1);
    expect(jsonOf(result).error.code).toBe('REDIS_UNAVAILABLE');
    expect(result.stderr).toMatch(/^error: cannot reach Redis at 127\.0\.0\.1:1/);
  });
});
