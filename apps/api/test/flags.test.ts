import { createSql, setFeatureFlags } from '@quest/db';
import { DomainError } from '@quest/domain';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../src/app.ts';
import { FeatureFlagCache, FLAGS_REFRESH_MS, type FlagsLogger } from '../src/flags.ts';
import { createLogger } from '../src/logger.ts';
import { createCampaign, createOwner, createQuest, readOnlyAllocator, startTestApp, type TestApp } from './helpers.ts';

function recordingLogger() {
  const entries: { level: 'info' | 'warn'; obj: object; msg: string }[] = [];
  const logger: FlagsLogger = {
    info: (obj, msg) => entries.push({ level: 'info', obj, msg }),
    warn: (obj, msg) => entries.push({ level: 'warn', obj, msg }),
  };
  return { logger, entries };
}

/**
 * The documented bound (docs/api.md, FeatureFlagCache): an operator's switch is seen by every API process
 * within 2 s. The mechanism gives at most one refresh interval (1 s in production) plus one query.
 * The assertion adds a generous margin for a loaded test machine (a bench beside the suite), where
 * the test's own polling and timers lag too: it catches a cache that stopped refreshing, not jitter.
 */
const FLAG_SWITCH_SEEN_WITHIN_MS = 2000;
const LOADED_MACHINE_MARGIN_MS = 3000;

// Two API "processes" on one database, both with the production refresh interval.
let a: TestApp;
let b: { app: FastifyInstance; close(): Promise<void> };
let campaignId: number;

/** A second app with its own pool and flag cache, as another API process would have. */
async function buildSecond(first: TestApp): Promise<typeof b> {
  const sql = createSql(first.db.url, { max: 2 });
  const logger = createLogger('silent');
  const flags = await FeatureFlagCache.start(sql, { refreshMs: FLAGS_REFRESH_MS, logger });
  const app = await buildApp(first.config, { sql, flags, allocator: readOnlyAllocator(), logger });
  return {
    app,
    async close() {
      flags.stop();
      await app.close();
      await sql.end();
    },
  };
}

beforeAll(async () => {
  a = await startTestApp({ flagsRefreshMs: FLAGS_REFRESH_MS });
  b = await buildSecond(a);
  const owner = await createOwner(a.sql);
  await createQuest(a.sql, { ownerId: owner.id });
  campaignId = await createCampaign(a.sql);
});
afterAll(async () => {
  await b.close();
  await a.close();
});

describe('feature flags switched at run time', () => {
  it('reloads often enough in production to keep the 2 s bound with a query to spare', () => {
    expect(FLAGS_REFRESH_MS).toBeLessThanOrEqual(1500);
  });

  it('an operator switch (setFeatureFlags, as the admin CLI does) reaches every API process within 2 s', async () => {
    const statusOf = async (app: FastifyInstance, url: string) => {
      const res = await app.inject({ method: 'GET', url });
      a.contract.check('GET', url, res);
      return res.statusCode;
    };
    /**
     * Milliseconds from `switchedAt` until `app` answers `url` with `status`. Polls until seen (well
     * past the bound, so a slow switch fails on the bound below with its measured time, not on a
     * timeout); the time taken is checked against the contract by the caller.
     */
    const seenAfter = async (app: FastifyInstance, url: string, status: number, switchedAt: number) => {
      await vi.waitFor(async () => expect(await statusOf(app, url)).toBe(status), { timeout: 10_000, interval: 20 });
      return performance.now() - switchedAt;
    };
    /** Switch `feature` and measure when each process sees it, from the moment the switch is issued. */
    const switchAndMeasure = async (feature: 'quests' | 'campaigns', enabled: boolean, url: string) => {
      // Measured from before the statement is sent: the row cannot be committed (nor seen) earlier,
      // so the measured time is an upper bound of the real one.
      const switchedAt = performance.now();
      await setFeatureFlags(a.sql, { [feature]: enabled });
      const status = enabled ? 200 : 400;
      return Promise.all([seenAfter(a.app, url, status, switchedAt), seenAfter(b.app, url, status, switchedAt)]);
    };
    try {
      for (const [feature, url] of [
        ['quests', '/quests'],
        ['campaigns', `/campaigns/${campaignId}`],
      ] as const) {
        expect(await statusOf(a.app, url)).toBe(200);
        const off = await switchAndMeasure(feature, false, url);
        const res = await a.request({ method: 'GET', url });
        expect(res.json().code).toBe(feature === 'quests' ? 'QUESTS_DISABLED' : 'CAMPAIGNS_DISABLED');
        const on = await switchAndMeasure(feature, true, url);
        for (const ms of [...off, ...on]) expect(ms).toBeLessThan(FLAG_SWITCH_SEEN_WITHIN_MS + LOADED_MACHINE_MARGIN_MS);
      }
    } finally {
      await setFeatureFlags(a.sql, { quests: true, campaigns: true });
    }
  });
});

describe('FeatureFlagCache', () => {
  it('loads the flags at start and answers from memory', async () => {
    await setFeatureFlags(a.sql, { quests: false, campaigns: true });
    const { logger } = recordingLogger();
    const cache = await FeatureFlagCache.start(a.sql, { refreshMs: 60_000, logger });
    try {
      expect(cache.current).toEqual({ quests: false, campaigns: true });
      expect(cache.isEnabled('quests')).toBe(false);
      expect(() => cache.require('campaigns')).not.toThrow();
      const error = (() => {
        try {
          cache.require('quests');
        } catch (e) {
          return e;
        }
      })();
      expect(error).toBeInstanceOf(DomainError);
      expect(error).toMatchObject({ code: 'QUESTS_DISABLED', statusCode: 400 });
      await setFeatureFlags(a.sql, { quests: true, campaigns: false });
      // No refresh yet (interval 60 s): still the loaded values.
      expect(cache.current).toEqual({ quests: false, campaigns: true });
      await cache.refresh();
      expect(cache.current).toEqual({ quests: true, campaigns: false });
      expect(() => cache.require('campaigns')).toThrow(expect.objectContaining({ code: 'CAMPAIGNS_DISABLED' }));
    } finally {
      cache.stop();
      await setFeatureFlags(a.sql, { quests: true, campaigns: true });
    }
  });

  it('keeps the last known values and logs a warning when a refresh fails', async () => {
    const sql = createSql(a.db.url, { max: 1 });
    const { logger, entries } = recordingLogger();
    await setFeatureFlags(a.sql, { quests: true, campaigns: false });
    const cache = await FeatureFlagCache.start(sql, { refreshMs: 60_000, logger });
    try {
      await sql.end();
      await cache.refresh();
      expect(cache.current).toEqual({ quests: true, campaigns: false });
      expect(entries).toContainEqual(expect.objectContaining({ level: 'warn', msg: expect.stringContaining('refresh failed') }));
    } finally {
      cache.stop();
      await setFeatureFlags(a.sql, { campaigns: true });
    }
  });

  it('refuses to start when the flags cannot be read', async () => {
    const sql = createSql('postgres://postgres@127.0.0.1:1/none', { connectTimeout: 1 });
    await expect(FeatureFlagCache.start(sql, { refreshMs: 1000, logger: recordingLogger().logger })).rejects.toThrow();
    await sql.end();
  });

  it('refreshes in the background until stopped', async () => {
    await setFeatureFlags(a.sql, { quests: true, campaigns: true });
    const { logger, entries } = recordingLogger();
    const refreshMs = 50;
    const cache = await FeatureFlagCache.start(a.sql, { refreshMs, logger });
    const refreshes = vi.spyOn(cache, 'refresh');
    let control: FeatureFlagCache | undefined;
    try {
      await setFeatureFlags(a.sql, { quests: false });
      await vi.waitFor(() => expect(cache.current.quests).toBe(false), { timeout: 10_000, interval: 10 });
      expect(entries).toContainEqual(expect.objectContaining({ level: 'info', msg: 'feature flags changed' }));

      cache.stop();
      await Promise.allSettled(refreshes.mock.results.map((r) => r.value));
      const refreshesBeforeStop = refreshes.mock.calls.length;
      // A control cache with the same interval, started now: its timers are set after any the stopped
      // cache could still have, and Node fires timers of one duration in the order they were set. So
      // once the control has seen the next switch, a cache still refreshing would have been called
      // again; no fixed wait needed.
      control = await FeatureFlagCache.start(a.sql, { refreshMs, logger: recordingLogger().logger });
      await setFeatureFlags(a.sql, { quests: true });
      await vi.waitFor(() => expect(control!.current.quests).toBe(true), { timeout: 10_000, interval: 10 });
      expect(refreshes).toHaveBeenCalledTimes(refreshesBeforeStop);
      expect(cache.current.quests).toBe(false);
    } finally {
      cache.stop();
      control?.stop();
      await setFeatureFlags(a.sql, { quests: true, campaigns: true });
    }
  });
});
