import net from 'node:net';
import { performance } from 'node:perf_hooks';
import { describe, expect, vi } from 'vitest';
import {
  auditViolations,
  createQuests,
  get,
  jobsAdded,
  liveWorkers,
  post,
  settle,
  type System,
  type SystemResponse,
  systemTest,
  unfinishedJobs,
} from '@quest/testing';
import { firstAddress, withAddress } from '@quest/config/urls';

/**
 * A TCP proxy to the real Redis that the test can cut, so no shared server is ever stopped. Its URL
 * is the target's with the proxy's address: the password and database index stay.
 */
function redisProxy(targetUrl: string) {
  const target = firstAddress(targetUrl, 6379);
  const sockets = new Set<net.Socket>();
  let server: net.Server | undefined;
  let port = 0;
  return {
    get listening() {
      return server?.listening ?? false;
    },
    open: () =>
      new Promise<void>((resolve) => {
        server = net.createServer((client) => {
          const upstream = net.connect(target.port, target.host);
          sockets.add(client).add(upstream);
          client.pipe(upstream).pipe(client);
          const close = () => {
            client.destroy();
            upstream.destroy();
            sockets.delete(client);
            sockets.delete(upstream);
          };
          client.on('error', close).on('close', close);
          upstream.on('error', close).on('close', close);
        });
        server.listen(port, '127.0.0.1', () => {
          port = (server!.address() as net.AddressInfo).port;
          resolve();
        });
      }),
    get url() {
      return withAddress(targetUrl, '127.0.0.1', port);
    },
    async cut() {
      const closed = new Promise<void>((resolve) => server!.close(() => resolve()));
      for (const s of sockets) s.destroy();
      sockets.clear();
      await closed;
    },
  };
}

const test = systemTest({ workers: 1, partitions: 4 })
  // The API reaches Redis through the proxy; the workers keep their direct connection.
  .extend('proxy', { scope: 'file' }, async ({ system }, { onCleanup }) => {
    const proxy = redisProxy(system.redis.url);
    await proxy.open();
    onCleanup(async () => {
      if (proxy.listening) await proxy.cut();
    });
    await system.api.stop('SIGTERM');
    await system.startApi({ REDIS_URL: proxy.url });
    return proxy;
  })
  // Each test starts from a whole service, whatever a test before it left behind: the proxy open,
  // the API and a worker running, and the API ready (it reaches PostgreSQL and Redis).
  .extend('serving', { auto: true }, async ({ system, proxy }) => {
    if (!proxy.listening) await proxy.open();
    if (system.api.child.exitCode !== null || system.api.child.signalCode !== null) {
      await system.startApi({ REDIS_URL: proxy.url });
    }
    if (liveWorkers(system).length === 0) await system.startWorker();
    await vi.waitFor(async () => expect((await get(system, '/readyz')).status).toBe(200), { timeout: 15_000, interval: 50 });
  });

/**
 * docs/reliability.md's bound: with Redis down, a POST answers 503 QUEUE_UNAVAILABLE within 1 s. Measured
 * per request from its own send, with a margin for a loaded 2-core machine.
 */
const QUEUE_DOWN_ANSWER_MS = 1000;
const LOADED_MACHINE_MARGIN_MS = 500;

/** Wait until the API has queued at least one more job than `before` (so it holds requests now). */
const apiHasQueuedWork = (system: System, before: number) =>
  vi.waitFor(async () => expect(await jobsAdded(system)).toBeGreaterThan(before), { timeout: 10_000, interval: 5 });

describe('faults', () => {
  test('Redis down: POST answers 503 QUEUE_UNAVAILABLE within 1 s, reads keep working, and it recovers', async ({
    system,
    database,
    proxy,
    owner,
    makeQuest,
    accounts,
  }) => {
    const q = await makeQuest({ totalPoints: 1000 });
    const auth = { 'x-api-key': owner.apiKey };
    const allocate = (headers: Record<string, string> = {}) =>
      post(system, `/quests/${q}`, { points: 1, address: accounts[0]! }, { ...auth, ...headers });
    expect((await allocate()).status).toBe(200);

    await proxy.cut();
    // The API has seen its Redis connection go.
    await vi.waitFor(async () => expect((await get(system, '/readyz')).status).toBe(503), { timeout: 10_000, interval: 20 });
    for (let i = 0; i < 3; i++) {
      const sentAt = performance.now();
      const res = await allocate();
      expect(performance.now() - sentAt, 'ms until the 503').toBeLessThan(QUEUE_DOWN_ANSWER_MS + LOADED_MACHINE_MARGIN_MS);
      expect(res.status).toBe(503);
      expect(res.body).toMatchObject({ statusCode: 503, code: 'QUEUE_UNAVAILABLE', requestId: expect.any(String) });
    }
    const read = await get(system, `/quests/${q}`, auth);
    expect(read.status).toBe(200);
    expect(read.body.points_remaining).toBe(999);
    expect((await get(system, '/readyz')).status).toBe(503);

    // Back up: a POST retried (with one Idempotency-Key, as docs/reliability.md advises) succeeds, and credits once.
    await proxy.open();
    await vi.waitFor(async () => expect((await allocate({ 'idempotency-key': 'after-the-outage' })).status).toBe(200), {
      timeout: 20_000,
      interval: 100,
    });
    expect((await get(system, `/quests/${q}`, auth)).body.points_remaining).toBe(998);
    expect(await auditViolations(database.sql)).toEqual([]);
  });

  test('SIGTERM: the API answers the requests it holds, the worker finishes its active job, nothing is half-written', async ({
    system,
    database,
    proxy,
    owner,
    accounts,
  }) => {
    const questIds = await createQuests(database.sql, 4, { ownerId: owner.id, totalPoints: 1_000_000 });
    const allocate = (i: number) =>
      post(
        system,
        `/quests/${questIds[i % questIds.length]!}`,
        { points: 2, address: accounts[i % accounts.length]! },
        { 'x-api-key': owner.apiKey },
      );

    // The worker is stopped once the API has queued work for it.
    let before = await jobsAdded(system);
    const inflight = Array.from({ length: 200 }, (_, i) => allocate(i));
    await apiHasQueuedWork(system, before);
    const worker = liveWorkers(system)[0]!;
    expect(await worker.stop('SIGTERM'), worker.output().slice(-3000)).toBe(0);
    await system.startWorker();
    const answers = await Promise.all(inflight);
    expect(answers.filter((a) => a.status !== 200 && a.status !== 202).map((a) => [a.status, a.body?.code])).toEqual([]);

    // The API is stopped once it has queued some of these (it holds those requests).
    before = await jobsAdded(system);
    const more = Array.from({ length: 50 }, (_, i) => allocate(i));
    await apiHasQueuedWork(system, before);
    const apiExit = system.api.stop('SIGTERM');
    const late = await Promise.allSettled(more);
    expect(
      await apiExit,
      system.api
        .output()
        .split('\n')
        .filter((l) => !l.includes('"level":30,') || l.includes('shut') || l.includes('"S'))
        .join('\n')
        .slice(-3000),
    ).toBe(0);
    // Requests the API had accepted were answered; the others were refused before it read them.
    const answered = late.filter((r) => r.status === 'fulfilled').map((r) => (r as PromiseFulfilledResult<SystemResponse>).value);
    expect(answered.length, 'answers to requests the API held').toBeGreaterThan(0);
    expect(answered.filter((a) => a.status !== 200 && a.status !== 202 && a.status !== 503).map((a) => a.status)).toEqual([]);

    // Everything queued gets decided: every 202 settles and the queues drain.
    await system.startApi({ REDIS_URL: proxy.url });
    const all = [...answers, ...answered];
    const settled: any[] = [];
    for (const a of all.filter((a) => a.status === 202)) {
      settled.push((await settle(system, a.headers.get('location')!, owner.apiKey)).allocation);
    }
    expect(settled.filter((s) => s.status !== 'completed')).toEqual([]);
    await vi.waitFor(async () => expect(await unfinishedJobs(system)).toBe(0), { timeout: 30_000, interval: 100 });

    // The ledger is consistent, and holds exactly the payouts the clients were told about: none was
    // credited behind a request whose answer was lost.
    expect(await auditViolations(database.sql)).toEqual([]);
    const [{ n }] = (await database.sql`
      select count(*)::int8 as n from payouts where quest_id = any(${questIds}::int[])`) as unknown as [{ n: number }];
    expect(n).toBe(all.filter((a) => a.status === 200).length + settled.length);
  });
});
