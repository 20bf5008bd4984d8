import { createSql, setFeatureFlags } from '@quest/db';
import { DomainError } from '@quest/domain';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../src/app.ts';
import { FeatureFlagCache, type FlagsLogger } from '../src/flags.ts';
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

async function until<T>(probe: () => Promise<T>, done: (value: T) => boolean, timeoutMs: number): Promise<number> {
  const started = Date.now();
  while (Date.now() - started < timeoutMs) {
    if (done(await probe())) return Date.now() - started;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`not seen within ${timeoutMs} ms`);
}

// Two API "processes" on one database, both with the production refresh interval (the default).
let a: TestApp;
let b: { app: FastifyInstance; close(): Promise<void> };
let campaignId: number;

/** A second app with its own pool and flag cache, as another API process would have. */
async function buildSecond(first: TestApp): Promise<typeof b> {
  const sql = createSql(first.db.url, { max: 2 });
  const logger = createLogger('silent');
  const flags = await FeatureFlagCache.start(sql, { refreshMs: first.config.FLAGS_REFRESH_MS, logger });
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
  a = await startTestApp({ env: { FLAGS_REFRESH_MS: '' } });
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
  it('uses the production refresh interval in this test', () => {
    expect(a.config.FLAGS_REFRESH_MS).toBe(1000);
  });

  it('an operator switch (setFeatureFlags, as the admin CLI does) reaches every API process within 2 s', async () => {
    const status = (app: FastifyInstance, url: string) => async () => {
      const res = await app.inject({ method: 'GET', url });
      a.contract.check('GET', url, res);
      return res.statusCode;
    };
    for (const [feature, url] of [
      ['quests', '/quests'],
      ['campaigns', `/campaigns/${campaignId}`],
    ] as const) {
      expect(await status(a.app, url)()).toBe(200);
      await setFeatureFlags(a.sql, { [feature]: false });
      const [offA, offB] = await Promise.all([
        until(status(a.app, url), (s) => s === 400, 2000),
        until(status(b.app, url), (s) => s === 400, 2000),
      ]);
      const res = await a.request({ method: 'GET', url });
      expect(res.json().code).toBe(feature === 'quests' ? 'QUESTS_DISABLED' : 'CAMPAIGNS_DISABLED');
      await setFeatureFlags(a.sql, { [feature]: true });
      const [onA, onB] = await Promise.all([
        until(status(a.app, url), (s) => s === 200, 2000),
        until(status(b.app, url), (s) => s === 200, 2000),
      ]);
      for (const ms of [offA, offB, onA, onB]) expect(ms).toBeLessThan(2000);
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
    await setFeatureFlags(a.sql, { campaigns: false });
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
    const { logger, entries } = recordingLogger();
    const cache = await FeatureFlagCache.start(a.sql, { refreshMs: 50, logger });
    try {
      await setFeatureFlags(a.sql, { quests: false });
      await until(
        async () => cache.current.quests,
        (q) => q === false,
        1000,
      );
      expect(entries).toContainEqual(expect.objectContaining({ level: 'info', msg: 'feature flags changed' }));
      cache.stop();
      await setFeatureFlags(a.sql, { quests: true });
      await new Promise((r) => setTimeout(r, 200));
      expect(cache.current.quests).toBe(false);
    } finally {
      cache.stop();
      await setFeatureFlags(a.sql, { quests: true });
    }
  });
});
