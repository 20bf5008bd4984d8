import type { ProxyFault } from '@quest/testing/tcp-proxy';
import type { Cluster } from '../cluster.ts';
import type { LoadProfile } from '../scenario.ts';
import { type Scenario, sleep } from '../scenario.ts';

/**
 * Gray failures (issue 29): the first of two workers stays alive but its network path fails, as an
 * operator's network would — through the TCP fault proxies between it and PostgreSQL / Redis. Each
 * fault lasts 20 s under the full load (10 s under the small one), then heals; the result reports
 * how soon every partition decided at half its earlier rate again, and any stall after the heal.
 */
const faultMs = (profile: LoadProfile) => Math.min(20_000, profile.outageMs);

function gray(name: string, fault: string, apply: (c: Cluster, profile: LoadProfile) => Promise<void> | void): Scenario {
  return {
    name,
    fault,
    workers: 2,
    redis: 'aof',
    credit: false,
    proxied: true,
    inject: async (c, started, profile) => {
      started();
      try {
        await apply(c, profile);
      } finally {
        c.proxies!.pg.setFault({ kind: 'pass' });
        c.proxies!.redis.setFault({ kind: 'pass' });
      }
    },
  };
}

/** Hold `fault` on the chosen paths for the fault's duration. */
const hold = (paths: ('pg' | 'redis')[], fault: ProxyFault) => async (c: Cluster, profile: LoadProfile) => {
  for (const p of paths) c.proxies![p].setFault(fault);
  await sleep(faultMs(profile));
};

export const grayPgBlackhole = gray(
  'gray-pg-blackhole',
  'a worker ↔ PostgreSQL blackholed (bytes held, no RST) 20 s',
  hold(['pg'], { kind: 'blackhole' }),
);

export const grayPgSlow = gray(
  'gray-pg-slow',
  'a worker ↔ PostgreSQL +300 ms each way, 20 s',
  hold(['pg'], { kind: 'delay', ms: 300 }),
);

export const grayRedisBlackhole = gray(
  'gray-redis-blackhole',
  'a worker ↔ Redis blackholed 20 s',
  hold(['redis'], { kind: 'blackhole' }),
);

export const grayPartitioned = gray(
  'gray-partitioned',
  'a worker partitioned from PostgreSQL and Redis (both blackholed) 20 s',
  hold(['pg', 'redis'], { kind: 'blackhole' }),
);

export const grayRstStorm = gray(
  'gray-rst-storm',
  "an RST storm: every one of a worker's PostgreSQL and Redis connections reset every 500 ms for 20 s",
  async (c, profile) => {
    const until = Date.now() + faultMs(profile);
    while (Date.now() < until) {
      c.proxies!.pg.resetAll();
      c.proxies!.redis.resetAll();
      await sleep(500);
    }
  },
);

export const GRAY_SCENARIOS = [grayPgBlackhole, grayPgSlow, grayRedisBlackhole, grayPartitioned, grayRstStorm];
