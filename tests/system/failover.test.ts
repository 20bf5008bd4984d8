import { afterAll, describe, expect, test, vi } from 'vitest';
import { createSql, type Sql } from '@quest/db';
import { migrate } from '@quest/db/migrate';
import { idempotentRequestKey } from '@quest/domain';
import { onExitCleanup } from '@quest/testing/exit';
import { jsonOrText } from '@quest/testing/http';
import { startPostgresPair } from '@quest/testing/postgres';
import { type ServiceProcess, startApiProcess, startWorker } from '@quest/testing/processes';
import { startRedis } from '@quest/testing/redis';
import { auditViolations, createAccounts, createOwner, createQuests, revokeApiKey } from '@quest/testing/seed';

/**
 * The short version of `npm run chaos -- --only primary-failover`: a primary, a synchronous standby
 * and an asynchronous one that is never promoted, all the test's own; the API and two workers given
 * the three hosts; keyed clients that retry. The primary's processes are SIGKILLed, and once the
 * API reports the database gone the synchronous standby is
 * promoted. Every acknowledged credit must be on the new primary, once; every 202 decided; the
 * audit clean; no process restarted; and the API's LISTEN for key revocations live again there.
 */

interface Op {
  key: string;
  questId: number;
  sentAt: number;
  /** The payout the client was told about (200, or its 202 followed to completed). */
  payoutId?: string;
  outcome?: 'completed' | 'rejected' | 'gave-up';
  okAt?: number;
}

/** Three processes start at once (tsx compiles each): generous for a loaded 2-core machine. */
const START_MS = 90_000;

const teardown: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const t of teardown.reverse()) await t().catch(() => {});
});

async function call(
  url: string,
  init: RequestInit = {},
): Promise<{ status: number | 'error'; body: any; location?: string | null }> {
  try {
    const res = await fetch(url, { ...init, signal: AbortSignal.timeout(10_000) });
    return { status: res.status, body: jsonOrText(await res.text()), location: res.headers.get('location') };
  } catch {
    return { status: 'error', body: undefined };
  }
}

describe('PostgreSQL failover', () => {
  test('primary SIGKILLed, standby promoted: nothing acknowledged lost, writes resume, revocations still heard', {
    timeout: 120_000,
  }, async () => {
    const [pair, redis] = await Promise.all([startPostgresPair({ asyncStandby: true }), startRedis('aof')]);
    teardown.push(
      () => pair.stop(),
      () => redis.stop(),
    );
    const url = pair.url('quest_failover');
    await migrate(url);
    const sql = createSql(url, { max: 2 });
    teardown.push(() => sql.end({ timeout: 1 }));
    const owner = await createOwner(sql);
    const questIds = await createQuests(sql, 2, { ownerId: owner.id, totalPoints: 1_000_000 });
    const accounts = await createAccounts(sql, 5);

    const env = {
      DATABASE_URL: url,
      REDIS_URL: redis.url,
      QUEUE_PREFIX: 'failover',
      QUEUE_PARTITIONS: '2',
      DATABASE_POOL_MAX: '4',
      ALLOCATION_WAIT_MS: '1000',
      RECONCILER_INTERVAL_MS: '500',
      RECONCILER_MIN_AGE_MS: '2000',
      // Only the revocation NOTIFY can empty the authorization cache within this test.
      AUTH_CACHE_TTL_MS: '600000',
    };
    const procs: ServiceProcess[] = [];
    const track = (p: ServiceProcess) => {
      procs.push(p);
      const unregister = onExitCleanup(() => p.child.kill('SIGKILL'));
      teardown.push(async () => {
        await p.stop('SIGKILL');
        unregister();
      });
      return p;
    };
    const [api, ...workers] = await Promise.all([
      startApiProcess(env, undefined, START_MS).then((a) => {
        track(a.process);
        return a;
      }),
      startWorker({ ...env, WORKER_ID: 'w1' }, START_MS).then(track),
      startWorker({ ...env, WORKER_ID: 'w2' }, START_MS).then(track),
    ]);
    for (const w of workers) expect(w!.output()).toContain('confirms every commit on a synchronous standby');

    // Keyed clients: a 5xx or a dropped connection is retried with the same key; a 202 is followed.
    const ops: Op[] = [];
    let stop = false;
    const headers = { 'content-type': 'application/json', 'x-api-key': owner.apiKey };
    const runOp = async (op: Op, body: object) => {
      const deadline = Date.now() + 60_000;
      while (Date.now() < deadline) {
        const res = await call(`${api!.baseUrl}/quests/${op.questId}`, {
          method: 'POST',
          headers: { ...headers, 'idempotency-key': op.key },
          body: JSON.stringify(body),
        });
        if (res.status === 200) {
          op.payoutId = res.body.payout.id;
          op.outcome = 'completed';
          op.okAt = Date.now();
          return;
        }
        if (res.status === 202) {
          while (Date.now() < deadline) {
            const s = await call(`${api!.baseUrl}${res.location}`, { headers });
            const status = s.status === 200 ? s.body.allocation.status : undefined;
            if (status === 'completed') {
              op.payoutId = s.body.allocation.payout.id;
              op.outcome = 'completed';
              return;
            }
            if (status === 'rejected') return void (op.outcome = 'rejected');
            if (status === 'failed') break;
            await new Promise((r) => setTimeout(r, 100));
          }
          continue;
        }
        if (res.status !== 'error' && res.status < 500)
          throw new Error(`unexpected answer ${res.status} ${JSON.stringify(res.body)}`);
        await new Promise((r) => setTimeout(r, 100));
      }
      op.outcome = 'gave-up';
    };
    const client = async (c: number) => {
      for (let n = 0; !stop; n++) {
        const op: Op = { key: `c${c}-n${n}`, questId: questIds[(c + n) % questIds.length]!, sentAt: Date.now() };
        ops.push(op);
        await runOp(op, { points: 1 + (n % 3), address: accounts[(c + n) % accounts.length] });
      }
    };
    const clients = Promise.all([0, 1, 2, 3].map(client));
    await vi.waitFor(() => expect(ops.filter((o) => o.outcome === 'completed').length).toBeGreaterThanOrEqual(20), {
      timeout: 30_000,
      interval: 20,
    });

    await pair.killPrimary();
    const killedAt = Date.now();
    // The failover manager's detection, stood in for by the API seeing its database gone.
    await vi.waitFor(async () => expect((await call(`${api!.baseUrl}/readyz`)).status).toBe(503), {
      timeout: 30_000,
      interval: 50,
    });
    await pair.promoteStandby();
    await vi.waitFor(() => expect(ops.some((o) => o.sentAt > killedAt && o.okAt !== undefined)).toBe(true), {
      timeout: 60_000,
      interval: 20,
    });
    stop = true;
    await clients;

    // Read from the new primary by its own address: what the lost primary alone had does not count.
    const next: Sql = createSql(pair.nodeUrl('standby', 'quest_failover'), { max: 2 });
    teardown.push(() => next.end({ timeout: 1 }));
    const payouts = await next<{ id: string; quest_id: number; request_key: string }[]>`
      select id, quest_id, request_key from payouts where batch_id is null`;
    const byKey = new Map<string, string[]>();
    for (const p of payouts)
      byKey.set(`${p.quest_id}:${p.request_key}`, [...(byKey.get(`${p.quest_id}:${p.request_key}`) ?? []), p.id]);
    const lost: string[] = [];
    for (const op of ops) {
      expect(op.outcome, `${op.key} decided`).toMatch(/^(completed|rejected)$/);
      if (op.outcome !== 'completed') continue;
      const stored = byKey.get(`${op.questId}:${idempotentRequestKey(owner.id, op.questId, op.key, 'alc')}`) ?? [];
      if (!stored.includes(op.payoutId!)) lost.push(op.key);
      expect(stored.length, `${op.key}: payouts stored`).toBeLessThanOrEqual(1);
    }
    expect(lost, 'acknowledged credits missing on the new primary').toEqual([]);
    expect(await auditViolations(next)).toEqual([]);
    expect(procs.filter((p) => p.child.exitCode !== null || p.child.signalCode !== null)).toEqual([]);

    // The API's LISTEN for revocations re-subscribed on the new primary: a revoked key is refused
    // at once, though the cache would keep it for ten minutes.
    await revokeApiKey(next, owner.apiKey);
    await vi.waitFor(async () => expect((await call(`${api!.baseUrl}/quests/${questIds[0]}`, { headers })).status).toBe(401), {
      timeout: 10_000,
      interval: 100,
    });
  });
});
