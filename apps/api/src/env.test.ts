import { ConfigError } from '@quest/config';
import { describe, expect, it } from 'vitest';
import { loadApiConfig } from './env.ts';

describe('loadApiConfig', () => {
  it('applies the documented defaults', () => {
    expect(loadApiConfig({})).toEqual({
      DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/quest_rewards',
      DATABASE_POOL_MAX: 10,
      LOG_LEVEL: 'info',
      REDIS_URL: 'redis://127.0.0.1:6379',
      QUEUE_PREFIX: 'quest',
      QUEUE_PARTITIONS: 16,
      HOST: '127.0.0.1',
      PORT: 3000,
      BODY_LIMIT_BYTES: 1_048_576,
      ALLOCATION_WAIT_MS: 5000,
      BATCH_WAIT_MS: 30_000,
      JOB_RETENTION_SECONDS: 60,
      BATCH_MAX_ITEMS: 10_000,
      COALESCE_MAX_ITEMS: 500,
      BATCH_BODY_LIMIT_BYTES: 4_194_304,
      AUTH_CACHE_TTL_MS: 30_000,
      METRICS_SAMPLE_MS: 5000,
      ADMIN_QUEUE_ACTIONS: false,
      IDEMPOTENCY_GUARD_TTL_MS: 86_400_000,
      RATE_LIMITS_ENABLED: true,
      RATE_LIMIT_WINDOW_MS: 60_000,
      RATE_LIMIT_ADDRESS_MAX: 90_000,
      RATE_LIMIT_KEY_MAX: 60_000,
      RATE_LIMIT_OWNER_ITEMS_MAX: 1_500_000,
      RATE_LIMIT_AUTH_FAILURES_MAX: 100,
      HTTP_HEADERS_TIMEOUT_MS: 10_000,
      HTTP_REQUEST_TIMEOUT_MS: 60_000,
      HTTP_CONNECTION_TIMEOUT_MS: 120_000,
      HTTP_KEEP_ALIVE_TIMEOUT_MS: 5_000,
      HTTP_MAX_CONNECTIONS: 10_000,
      TRUST_PROXY: false,
      WEBHOOK_ALLOW_PRIVATE_URLS: false,
      DATABASE_READ_MAX_LAG_MS: 5000,
      DB_STATEMENT_TIMEOUT_MS: 10_000,
    });
  });

  it('parses values from strings', () => {
    const config = loadApiConfig({
      PORT: '8080',
      TRUST_PROXY: 'yes',
      LOG_LEVEL: 'debug',
      BATCH_WAIT_MS: '250',
      HOST: '0.0.0.0',
    });
    expect(config).toMatchObject({ PORT: 8080, TRUST_PROXY: true, LOG_LEVEL: 'debug', BATCH_WAIT_MS: 250, HOST: '0.0.0.0' });
  });

  it('takes a multi-host DATABASE_URL only with target_session_attrs=read-write (or primary)', () => {
    const hosts = 'postgres://app@pg1:5432,pg2:5432/quest_rewards';
    expect(loadApiConfig({ DATABASE_URL: `${hosts}?target_session_attrs=read-write` }).DATABASE_URL).toBe(
      `${hosts}?target_session_attrs=read-write`,
    );
    expect(loadApiConfig({ DATABASE_URL: `${hosts}?sslmode=require&target_session_attrs=primary` })).toBeDefined();
    expect(() => loadApiConfig({ DATABASE_URL: hosts })).toThrow(/DATABASE_URL.*target_session_attrs=read-write/);
    expect(() => loadApiConfig({ DATABASE_URL: `${hosts}?target_session_attrs=any` })).toThrow(ConfigError);
  });

  it('lists every bad variable in one readable error', () => {
    let error: unknown;
    try {
      loadApiConfig({ PORT: 'abc', DATABASE_URL: 'mysql://x', ALLOCATION_WAIT_MS: '70000', TRUST_PROXY: 'maybe' });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as Error).message;
    for (const name of ['PORT', 'DATABASE_URL', 'ALLOCATION_WAIT_MS', 'TRUST_PROXY']) expect(message).toContain(name);
    expect(message).toContain('"abc"');
  });

  it('reads an empty ADMIN_TOKEN as no console, and refuses a short one', () => {
    expect(loadApiConfig({ ADMIN_TOKEN: '' }).ADMIN_TOKEN).toBeUndefined();
    expect(loadApiConfig({ ADMIN_TOKEN: 'operator-token-0123456789' }).ADMIN_TOKEN).toBe('operator-token-0123456789');
    expect(() => loadApiConfig({ ADMIN_TOKEN: 'short' })).toThrow(/ADMIN_TOKEN/);
  });
});
