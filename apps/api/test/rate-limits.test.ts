import { createTestDatabase, createTestRedis, type TestDatabase, type TestRedis } from '@quest/testing';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registry } from '../src/metrics.ts';
import {
  createAccount,
  createOwner,
  createQuest,
  type SeededOwner,
  pendingAllocator,
  startTestApp,
  type TestApp,
} from './helpers.ts';

/** Rate limits (issue 11, item 9): 429 RATE_LIMITED in the envelope, with Retry-After and x-ratelimit-*. */

let db: TestDatabase;
let redisServer: TestRedis;
let redis: Redis;
let owner: SeededOwner;
let questId: number;
let address: `0x${string}`;
const apps: TestApp[] = [];

beforeAll(async () => {
  [db, redisServer] = await Promise.all([createTestDatabase({ max: 4 }), createTestRedis()]);
  redis = new Redis(redisServer.url, { maxRetriesPerRequest: 1 });
  owner = await createOwner(db.sql);
  questId = await createQuest(db.sql, { ownerId: owner.id, totalPoints: 1_000_000 });
  address = (await createAccount(db.sql)).address;
});
afterAll(async () => {
  for (const a of apps) await a.close();
  redis?.disconnect();
  await redisServer?.cleanup();
  await db?.drop();
});

/** An app whose limits are counted in the shared Redis under a prefix of the test's own. */
async function appWith(env: Record<string, string>, prefix: string, defaultRateLimits = false): Promise<TestApp> {
  const app = await startTestApp({
    db,
    redis,
    allocator: pendingAllocator,
    defaultRateLimits,
    env: { QUEUE_PREFIX: `${redisServer.prefix}-${prefix}`, ...env },
  });
  apps.push(app);
  return app;
}

function expect429(res: Awaited<ReturnType<TestApp['request']>>) {
  expect(res.statusCode, res.body).toBe(429);
  expect(res.json()).toMatchObject({ statusCode: 429, code: 'RATE_LIMITED', requestId: expect.any(String) });
  expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
  expect(res.headers['x-ratelimit-limit']).toBeDefined();
  expect(res.headers['x-ratelimit-remaining']).toBe('0');
}

describe('rate limits', () => {
  it('per client address on public routes, shared by every API process through Redis', async () => {
    const first = await appWith({ RATE_LIMIT_ADDRESS_MAX: '3' }, 'address');
    const second = await appWith({ RATE_LIMIT_ADDRESS_MAX: '3' }, 'address');
    expect((await first.request({ method: 'GET', url: '/quests' })).statusCode).toBe(200);
    expect((await second.request({ method: 'GET', url: '/quests' })).statusCode).toBe(200);
    expect((await first.request({ method: 'GET', url: '/quests' })).statusCode).toBe(200);
    expect429(await second.request({ method: 'GET', url: '/quests' }));
    expect((await first.request({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
  });

  it.each([
    ["the proxy's address", '10.1.2.3', 'address'],
    ["the proxy's range", '10.0.0.0/8', 'range'],
  ])(
    'per client address behind a proxy that appends to X-Forwarded-For, TRUST_PROXY as %s: a client cannot pick its own',
    async (_, trust, name) => {
      const t = await appWith({ RATE_LIMIT_ADDRESS_MAX: '2', TRUST_PROXY: trust }, `proxy-${name}`);
      // The proxy at 10.1.2.3 appends the address it saw (203.0.113.9) to whatever the client sent.
      const via = (forged: string) =>
        t.app.inject({ url: '/quests', remoteAddress: '10.1.2.3', headers: { 'x-forwarded-for': `${forged}, 203.0.113.9` } });
      expect((await via('198.51.100.1')).statusCode).toBe(200);
      expect((await via('198.51.100.2')).statusCode).toBe(200);
      expect429(await via('198.51.100.3'));
      // Another client behind the same proxy has a budget of its own.
      const other = await t.app.inject({
        url: '/quests',
        remoteAddress: '10.1.2.3',
        headers: { 'x-forwarded-for': '203.0.113.10' },
      });
      expect(other.statusCode).toBe(200);
    },
  );

  it('per API key', async () => {
    const t = await appWith({ RATE_LIMIT_KEY_MAX: '2' }, 'key');
    const get = () => t.request({ method: 'GET', url: `/quests/${questId}`, headers: { 'x-api-key': owner.apiKey } });
    expect((await get()).statusCode).toBe(200);
    expect((await get()).statusCode).toBe(200);
    expect429(await get());
  });

  it('per owner, counting batch items as items', async () => {
    const t = await appWith({ RATE_LIMIT_OWNER_ITEMS_MAX: '5' }, 'owner');
    const batch = (n: number) =>
      t.request({
        method: 'POST',
        url: `/quests/${questId}/batches`,
        payload: { allocations: Array.from({ length: n }, () => ({ address: address.toLowerCase(), points: 1 })) },
        headers: { 'x-api-key': owner.apiKey },
      });
    const single = () =>
      t.request({
        method: 'POST',
        url: `/quests/${questId}`,
        payload: { address, points: 1 },
        headers: { 'x-api-key': owner.apiKey },
      });
    expect((await batch(4)).statusCode).toBe(202);
    expect429(await batch(2));
    // The refused batch spent nothing: one item still fits, then none.
    expect((await single()).statusCode).toBe(202);
    expect429(await single());
  });

  it('failed authentications per client address', async () => {
    const t = await appWith({ RATE_LIMIT_AUTH_FAILURES_MAX: '2' }, 'auth');
    const get = (key: string) => t.request({ method: 'GET', url: `/quests/${questId}`, headers: { 'x-api-key': key } });
    const unknown = `sk_${'x'.repeat(43)}`;
    expect((await get(unknown)).statusCode).toBe(401);
    expect((await get(unknown)).statusCode).toBe(401);
    expect429(await get(unknown));
    expect429(await get(owner.apiKey));
  });

  it('by default, refuses the 101st failed authentication from one address within a minute', async () => {
    const t = await appWith({}, 'auth-defaults', true);
    expect(t.config.RATE_LIMIT_AUTH_FAILURES_MAX).toBe(100);
    const get = (key: string) => t.request({ method: 'GET', url: `/quests/${questId}`, headers: { 'x-api-key': key } });
    // A client trying 101 made-up keys, one after another.
    for (let i = 0; i < 100; i++) expect((await get(`sk_${String(i).padStart(43, 'x')}`)).statusCode).toBe(401);
    expect429(await get(`sk_${'y'.repeat(43)}`));
    // The address is refused, whatever key it shows now.
    expect429(await get(owner.apiKey));
  });

  it('cost no Redis command per request in steady state: one lease per budget, one failure-count read', async () => {
    // Its own connection, so every command the limits send is counted (ioredis funnels them all
    // through sendCommand). Before leasing, each keyed request sent four.
    const counted = new Redis(redisServer.url, { maxRetriesPerRequest: 1 });
    const commands: string[] = [];
    const send = counted.sendCommand.bind(counted);
    counted.sendCommand = ((command: { name: string }) => {
      commands.push(command.name);
      return send(command as Parameters<typeof send>[0]);
    }) as typeof counted.sendCommand;
    const t = await startTestApp({
      db,
      redis: counted,
      allocator: pendingAllocator,
      env: { QUEUE_PREFIX: `${redisServer.prefix}-steady` },
    });
    apps.push(t);
    try {
      commands.length = 0;
      const requests = 200;
      for (let i = 0; i < requests; i++) {
        const res = await t.request({
          method: 'POST',
          url: `/quests/${questId}`,
          payload: { address, points: 1 },
          headers: { 'x-api-key': owner.apiKey },
        });
        expect(res.statusCode, res.body).toBe(202);
      }
      // Budgets: per address, per key, per owner's items; plus the failed-authentication count,
      // read at most once a second (the loop may straddle a few seconds on a busy machine).
      const reads = commands.filter((c) => c === 'evalsha' || c === 'eval').length;
      expect(reads).toBeLessThan(requests / 10);
    } finally {
      counted.disconnect();
    }
  });

  it('are all off with RATE_LIMITS_ENABLED=false', async () => {
    const t = await appWith(
      {
        RATE_LIMITS_ENABLED: 'false',
        RATE_LIMIT_ADDRESS_MAX: '1',
        RATE_LIMIT_KEY_MAX: '1',
        RATE_LIMIT_OWNER_ITEMS_MAX: '1',
      },
      'off',
    );
    for (let i = 0; i < 3; i++) {
      const res = await t.request({
        method: 'POST',
        url: `/quests/${questId}`,
        payload: { address, points: 1 },
        headers: { 'x-api-key': owner.apiKey },
      });
      expect(res.statusCode, res.body).toBe(202);
      expect(res.headers['x-ratelimit-limit']).toBeUndefined();
    }
  });

  it('counts every 429 in quest_rate_limited_total by scope (after the cases above)', async () => {
    // The process's registry, as GET /metrics serializes it.
    const text = await registry.getSingleMetricAsString('quest_rate_limited_total');
    for (const scope of ['address', 'key', 'owner_items', 'auth_failures']) {
      const line = new RegExp(`^quest_rate_limited_total\\{scope="${scope}"\\} (\\d+)$`, 'm').exec(text);
      expect(Number(line?.[1]), scope).toBeGreaterThanOrEqual(1);
    }
  });

  it('documents 429 RATE_LIMITED on every operation but liveness, which is never limited', () => {
    const doc = apps[0]!.contract.doc as unknown as {
      paths: Record<string, Record<string, { responses: Record<string, unknown> }>>;
    };
    for (const [path, ops] of Object.entries(doc.paths)) {
      if (path === '/healthz') continue;
      for (const [method, op] of Object.entries(ops)) expect(op.responses['429'], `${method} ${path}`).toBeDefined();
    }
  });
});
