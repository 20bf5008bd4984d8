import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditViolations, get, post, seed, startSystem, type System } from './harness.ts';

/** A TCP proxy to the real Redis that the test can cut, so no shared server is ever stopped. */
function redisProxy(target: URL) {
  const sockets = new Set<net.Socket>();
  let server: net.Server | undefined;
  let port = 0;
  const open = () =>
    new Promise<void>((resolve) => {
      server = net.createServer((client) => {
        const upstream = net.connect(Number(target.port || 6379), target.hostname);
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
    });
  return {
    open,
    get url() {
      return `redis://127.0.0.1:${port}`;
    },
    async cut() {
      const closed = new Promise<void>((resolve) => server!.close(() => resolve()));
      for (const s of sockets) s.destroy();
      sockets.clear();
      await closed;
    },
  };
}

let system: System;
let proxy: ReturnType<typeof redisProxy>;

beforeAll(async () => {
  system = await startSystem({ workers: 1, partitions: 4 });
  proxy = redisProxy(new URL(system.redis.url));
  await proxy.open();
  // Restart the API behind the proxy; the worker keeps its direct connection.
  await system.api.stop('SIGTERM');
  await system.startApi({ REDIS_URL: proxy.url });
});
afterAll(async () => {
  await proxy?.cut().catch(() => {});
  await system?.stop();
});

describe('faults', () => {
  it('Redis down: POST answers 503 QUEUE_UNAVAILABLE within 1 s, reads keep working, and it recovers', async () => {
    const { apiKey, questIds, accounts } = await seed(system, { quests: 1, total: 1000 });
    const q = questIds[0]!;
    const ok = await post(system, `/quests/${q}`, { points: 1, address: accounts[0]! }, { 'x-api-key': apiKey });
    expect(ok.status).toBe(200);

    await proxy.cut();
    await new Promise((r) => setTimeout(r, 200));
    for (let i = 0; i < 3; i++) {
      const started = Date.now();
      const res = await post(system, `/quests/${q}`, { points: 1, address: accounts[0]! }, { 'x-api-key': apiKey });
      expect(Date.now() - started).toBeLessThan(1000);
      expect(res.status).toBe(503);
      expect(res.body).toMatchObject({ statusCode: 503, code: 'QUEUE_UNAVAILABLE', requestId: expect.any(String) });
    }
    const read = await get(system, `/quests/${q}`, { 'x-api-key': apiKey });
    expect(read.status).toBe(200);
    expect(read.body.points_remaining).toBe(999);
    expect((await get(system, '/readyz')).status).toBe(503);

    await proxy.open();
    const deadline = Date.now() + 10_000;
    let status = 0;
    while (Date.now() < deadline) {
      status = (await post(system, `/quests/${q}`, { points: 1, address: accounts[0]! }, { 'x-api-key': apiKey })).status;
      if (status === 200) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    expect(status).toBe(200);
    expect(await auditViolations(system)).toEqual([]);
  });

  it('SIGTERM: the API answers the requests it holds, the worker finishes its active job, nothing is half-written', async () => {
    const { apiKey, questIds, accounts } = await seed(system, { quests: 4, total: 1_000_000 });
    const inflight = Array.from({ length: 200 }, (_, i) =>
      post(
        system,
        `/quests/${questIds[i % 4]!}`,
        { points: 2, address: accounts[i % accounts.length]! },
        { 'x-api-key': apiKey },
      ),
    );
    await new Promise((r) => setTimeout(r, 30));
    const worker = system.workers[0]!;
    const workerExit = await worker.stop('SIGTERM');
    expect(workerExit, worker.output().slice(-3000)).toBe(0);
    await system.startWorker();
    const answers = await Promise.all(inflight);
    expect(answers.filter((a) => a.status !== 200 && a.status !== 202)).toEqual([]);

    const more = Array.from({ length: 50 }, (_, i) =>
      post(system, `/quests/${questIds[i % 4]!}`, { points: 2, address: accounts[i]! }, { 'x-api-key': apiKey }),
    );
    await new Promise((r) => setTimeout(r, 20));
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
    // Requests the API had accepted were answered; none got a broken connection mid-answer with a credit behind it.
    const answered = late
      .filter((r) => r.status === 'fulfilled')
      .map((r) => (r as PromiseFulfilledResult<{ status: number }>).value.status);
    expect(answered.every((s) => s === 200 || s === 202 || s === 503)).toBe(true);
    await system.startApi({ REDIS_URL: proxy.url });
    // Let any queued decisions land, then the ledger must be consistent.
    await new Promise((r) => setTimeout(r, 1500));
    expect(await auditViolations(system)).toEqual([]);
    const [{ n }] = (await system.db
      .sql`select count(*)::int8 as n from payouts where quest_id = any(${questIds}::int[])`) as unknown as [{ n: number }];
    expect(n).toBeGreaterThanOrEqual(answers.filter((a) => a.status === 200).length);
  });
});
