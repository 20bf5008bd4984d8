import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { idempotentRequestKey, partitionOf } from '@quest/domain';
import {
  auditViolations,
  createAccounts,
  createOwner,
  createQuests,
  createTestDatabase,
  createTestRedis,
  lastLogLine,
  type SeededOwner,
  type ServiceProcess,
  startSystem,
  type System,
  waitForPool,
  workerId,
} from '@quest/testing';
import { startTcpFaultProxy, type ProxyFault, type TcpFaultProxy } from '@quest/testing/tcp-proxy';

/**
 * Issue 29, the short version of the chaos suite's gray failures: two workers, one of them ("the
 * sick one") reaching PostgreSQL and Redis through TCP proxies of the test's own. One fault at a
 * time — its database blackholed, its database 300 ms away, its Redis blackholed — while clients
 * keep crediting every partition. Each time the sick worker must give its partitions away (its log
 * says why), every partition must decide again while the fault lasts, and after the heal it must
 * rejoin; nothing paid twice, nothing lost, the audit clean.
 */

const PARTITIONS = 4;
let system: System;
let owner: SeededOwner;
let questIds: number[];
let accounts: `0x${string}`[];
let pgProxy: TcpFaultProxy;
let redisProxy: TcpFaultProxy;
let sick: ServiceProcess;
let healthy: ServiceProcess;

beforeAll(async () => {
  const [db, redis] = await Promise.all([createTestDatabase({ max: 4 }), createTestRedis()]);
  const pg = new URL(db.url);
  const rd = new URL(redis.url);
  [pgProxy, redisProxy] = await Promise.all([
    startTcpFaultProxy({ host: pg.hostname, port: Number(pg.port || 5432) }),
    startTcpFaultProxy({ host: rd.hostname, port: Number(rd.port || 6379) }),
  ]);
  system = await startSystem({
    workers: 0,
    partitions: PARTITIONS,
    db,
    redis,
    env: { ALLOCATION_WAIT_MS: '2000', RECONCILER_INTERVAL_MS: '1000', RECONCILER_MIN_AGE_MS: '3000' },
  });
  sick = await system.startWorker({ DATABASE_URL: pgProxy.proxyUrl(db.url), REDIS_URL: redisProxy.proxyUrl(redis.url) });
  healthy = await system.startWorker();
  await waitForPool(system);
  owner = await createOwner(db.sql);
  questIds = await createQuests(db.sql, 8, { ownerId: owner.id, totalPoints: 1_000_000_000 });
  accounts = await createAccounts(db.sql, 20);
  expect(new Set(questIds.map((q) => partitionOf(q, PARTITIONS))).size).toBe(PARTITIONS);
}, 120_000);

afterAll(async () => {
  await system?.stop();
  await system?.db.drop();
  await system?.redis.cleanup();
  await Promise.all([pgProxy?.close(), redisProxy?.close()]);
});

/**
 * Clients crediting every quest until stopped: each request retried with its key on a 503 or a
 * network error (what a careful client does); a 202 is followed to its outcome at the end.
 */
function load(tag: string) {
  let stop = false;
  let sent = 0;
  const pending: string[] = [];
  const keys: string[] = [];
  /** The ledger's request key of each request (derived from its Idempotency-Key, owner and quest). */
  const client = async () => {
    while (!stop) {
      const i = sent++;
      const key = `${tag}-${i}`;
      const questId = questIds[i % questIds.length]!;
      keys.push(idempotentRequestKey(owner.id, questId, key, 'alc'));
      for (;;) {
        const res = await fetch(`${system.baseUrl}/quests/${questId}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-api-key': owner.apiKey, 'idempotency-key': key },
          body: JSON.stringify({ points: 1, address: accounts[i % accounts.length] }),
        }).catch(() => undefined);
        await res?.arrayBuffer();
        if (res?.status === 200) break;
        if (res?.status === 202) {
          pending.push(res.headers.get('location')!);
          break;
        }
        expect(res === undefined || res.status === 503, `request ${key}: ${res?.status}`).toBe(true);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  };
  const clients = Array.from({ length: 4 }, client);
  return {
    keys,
    async stop() {
      stop = true;
      await Promise.all(clients);
      for (const location of pending) {
        await vi.waitFor(
          async () => {
            const res = await fetch(`${system.baseUrl}${location}`, { headers: { 'x-api-key': owner.apiKey } });
            expect(((await res.json()) as { allocation: { status: string } }).allocation.status).toBe('completed');
          },
          { timeout: 60_000, interval: 100 },
        );
      }
    },
  };
}

/** Partitions with a payout created after `since`. */
async function decidedSince(since: Date): Promise<number[]> {
  const rows = await system.db.sql<{ quest_id: number }[]>`
    select distinct quest_id from payouts where quest_id = any(${questIds}::int[]) and created_at > ${since}`;
  return [...new Set(rows.map((r) => partitionOf(r.quest_id, PARTITIONS)))].sort();
}

const ALL = Array.from({ length: PARTITIONS }, (_, p) => p);

/** Count of a worker's log lines carrying `msg`. */
const logCount = (w: ServiceProcess, msg: string) => w.output().split(`"msg":"${msg}`).length - 1;

async function faultRound(tag: string, proxy: TcpFaultProxy, fault: ProxyFault, leaves: string) {
  const before = logCount(sick, leaves);
  const traffic = load(tag);
  // Both workers serve before the fault.
  await vi.waitFor(async () => expect(await decidedSince(new Date(Date.now() - 1000))).toEqual(ALL), {
    timeout: 20_000,
    interval: 100,
  });
  proxy.setFault(fault);
  const faultAt = Date.now();
  // The sick worker says why it gives its partitions away, and the healthy one takes them all.
  await vi
    .waitFor(() => expect(logCount(sick, leaves)).toBeGreaterThan(before), { timeout: 20_000, interval: 50 })
    .catch((err) => {
      console.error(sick.output().slice(-6000));
      throw err;
    });
  await vi.waitFor(() => expect(lastLogLine(healthy, 'partitions rebalanced')?.partitions).toEqual(ALL), {
    timeout: 20_000,
    interval: 50,
  });
  const movedAt = Date.now();
  // Every partition decides again while the fault lasts.
  const moved = new Date();
  await vi.waitFor(async () => expect(await decidedSince(moved)).toEqual(ALL), { timeout: 30_000, interval: 100 });
  console.info(
    `${tag}: partitions moved ${movedAt - faultAt} ms after the fault, every partition deciding again after ${Date.now() - faultAt} ms`,
  );
  proxy.setFault({ kind: 'pass' });
  // Healed: the sick worker rejoins and both serve again.
  await waitForPool(system, 2);
  const healed = new Date();
  await vi.waitFor(async () => expect(await decidedSince(healed)).toEqual(ALL), { timeout: 30_000, interval: 100 });
  // …and the sick worker decides again itself (its database pool is not wedged after the heal).
  const decidedBefore = logCount(sick, 'allocations decided');
  await vi.waitFor(() => expect(logCount(sick, 'allocations decided')).toBeGreaterThan(decidedBefore), {
    timeout: 30_000,
    interval: 100,
  });
  await traffic.stop();
  // Every request credited exactly once, the ledger intact.
  const paid = await system.db.sql<{ request_key: string; n: number }[]>`
    select request_key, count(*)::int as n from payouts where request_key = any(${traffic.keys}) group by request_key`;
  expect(paid.filter((p) => p.n !== 1)).toEqual([]);
  expect(paid.map((p) => p.request_key).sort()).toEqual([...traffic.keys].sort());
  expect(await auditViolations(system.db.sql)).toEqual([]);
}

describe('a worker that cannot do the work gives its partitions away (issue 29)', () => {
  it('when its PostgreSQL is blackholed (bytes held, no RST)', async () => {
    await faultRound('pg-blackhole', pgProxy, { kind: 'blackhole' }, 'leaving the pool: the database does not answer');
  }, 120_000);

  it('when its PostgreSQL answers 300 ms late each way while its peer gets answers at once', async () => {
    await faultRound('pg-slow', pgProxy, { kind: 'delay', ms: 300 }, 'leaving the pool: the database');
  }, 120_000);

  it('when its Redis is blackholed: it fences itself before its membership lapses', async () => {
    await faultRound('redis-blackhole', redisProxy, { kind: 'blackhole' }, 'fenced: pool membership not renewed in time');
    expect(workerId(sick)).not.toBe(workerId(healthy));
  }, 120_000);
});
