import { describe, expect, it } from 'vitest';
import { loadWorkerConfig } from './env.ts';

const base = { DATABASE_URL: 'postgres://localhost/quest', REDIS_URL: 'redis://localhost:6379' };

describe('the worker environment', () => {
  it('refuses a membership TTL too short for its heartbeat (a worker would fence itself at every beat)', () => {
    expect(() => loadWorkerConfig({ ...base, WORKER_HEARTBEAT_MS: '1000', WORKER_MEMBER_TTL_MS: '2000' })).toThrow(
      /WORKER_MEMBER_TTL_MS: must be at least 2.5 × WORKER_HEARTBEAT_MS \(2500\) \(got 2000\)/,
    );
    expect(loadWorkerConfig({ ...base, WORKER_HEARTBEAT_MS: '200', WORKER_MEMBER_TTL_MS: '500' }).WORKER_MEMBER_TTL_MS).toBe(500);
    expect(loadWorkerConfig(base)).toMatchObject({ WORKER_HEARTBEAT_MS: 1000, WORKER_MEMBER_TTL_MS: 3000 });
  });
});
