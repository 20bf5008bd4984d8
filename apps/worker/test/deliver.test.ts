import { randomBytes } from 'node:crypto';
import { describe, expect } from 'vitest';
import { claimDueDeliveries, type DeliveryGroup, insertEndpoint, insertEvents, publishEvents, type Sql } from '@quest/db';
import { DEFAULT_RETRY_SCHEDULE, encryptSecret, newId, newWebhookSecret } from '@quest/domain';
import type { DeliveryQueue } from '@quest/queue';
import { test as base, handOverAgain, startWebhookReceiver, type WebhookReceiver } from '@quest/testing';
import { type DeliverDeps, deliverGroup, type GroupResult, SignerCache } from '../src/webhooks/deliver.ts';
import { OutboxPump, type PumpOptions } from '../src/webhooks/pump.ts';

const silent = { info: () => {}, warn: () => {} };

/** The fixtures of @quest/testing, and `receiver`: a webhook receiver of the test's own, closed after it. */
// biome-ignore lint/correctness/noEmptyPattern: vitest reads a fixture's dependencies from this pattern
const test = base.extend('receiver', async ({}, { onCleanup }) => {
  const receiver = await startWebhookReceiver();
  onCleanup(() => receiver.close());
  return receiver;
});

const key = randomBytes(32);

/**
 * `sql`, counting the statements run through it (tagged-template calls that are awaited: a
 * fragment interpolated into another statement is part of that one), also on the connections it
 * reserves for transactions — transaction control (BEGIN, COMMIT, session settings) aside.
 */
function counting(sql: Sql): { sql: Sql; statements: () => number } {
  let n = 0;
  const control = /^\s*(begin|commit|rollback|set local|select set_config)\b/i;
  const count = <T extends object>(target: T): T =>
    new Proxy(target, {
      apply(fn, self, args) {
        const query = Reflect.apply(fn as never, self, args) as PromiseLike<unknown>;
        const strings = args[0] as TemplateStringsArray;
        if (!Array.isArray(strings) || !('raw' in strings) || control.test(strings[0] ?? '')) return query;
        const then = query.then;
        let run = false;
        // biome-ignore lint/suspicious/noThenProperty: a statement runs when awaited; a fragment never is.
        query.then = function (this: PromiseLike<unknown>, ...a) {
          if (!run) n++;
          run = true;
          return then.apply(this, a as never) as never;
        };
        return query;
      },
      get(obj, prop, receiver) {
        const value = Reflect.get(obj, prop, receiver);
        if (prop !== 'reserve' || typeof value !== 'function') return value;
        return async (...args: unknown[]) => count(await (value as (...a: unknown[]) => Promise<object>).apply(obj, args));
      },
    });
  return { sql: count(sql), statements: () => n };
}

async function endpoint(sql: Sql, ownerId: string, receiver: WebhookReceiver) {
  const id = newId('whe');
  const secret = newWebhookSecret();
  await insertEndpoint(sql, {
    id,
    ownerId,
    url: receiver.url,
    description: '',
    eventTypes: null,
    secretEnc: encryptSecret(secret, key, id),
  });
  receiver.secrets = [...receiver.secrets, secret];
  return id;
}

/** `n` published events of the owner: one pending delivery each per endpoint of the owner. */
async function events(sql: Sql, ownerId: string, n: number) {
  const ids = Array.from({ length: n }, () => newId('evt'));
  await insertEvents(
    sql,
    ids.map((id) => ({
      id,
      ownerId,
      type: 'payout.created' as const,
      questId: null,
      allocationId: null,
      batchId: null,
      data: { n: id },
      createdAt: new Date(),
    })),
  );
  for (let r = await publishEvents(sql, 1000); r.published > 0; r = await publishEvents(sql, 1000));
  return ids;
}

/** Every due delivery, handed over in groups of `size`. */
async function claim(sql: Sql, size: number): Promise<DeliveryGroup[]> {
  return claimDueDeliveries(sql, 10_000, size);
}

/** The tests of this file share a database: earlier tests' retries are not due during a later one. */
async function quiet(sql: Sql) {
  await sql`update webhook_deliveries set next_attempt_at = now() + interval '1 day' where status = 'pending'`;
}

/** A pump over `queue` with the tests' defaults; `opts` overrides them. */
const pumpOver = (sql: Sql, queue: DeliveryQueue, opts: Partial<PumpOptions> = {}) =>
  new OutboxPump({
    sql,
    queue,
    pageSize: 1000,
    groupSize: 10,
    highWater: 10_000,
    idleMs: 1000,
    retentionDays: 30,
    jobRetentionSeconds: 60,
    logger: silent,
    ...opts,
  });

const deps = (sql: Sql, extra: Partial<DeliverDeps> = {}): DeliverDeps => ({
  sql,
  secretKey: key,
  schedule: DEFAULT_RETRY_SCHEDULE,
  send: { allowPrivate: true, timeoutMs: 5000, maxBodyBytes: 64 * 1024 },
  logger: silent,
  concurrency: 4,
  ...extra,
});

describe('delivering a group of webhook deliveries', () => {
  test('one job for two endpoints, one failing: each outcome recorded, in one read and one write', async ({
    database,
    owner,
  }) => {
    const ok = await startWebhookReceiver();
    const down = await startWebhookReceiver();
    try {
      const { sql } = database;
      await quiet(sql);
      const good = await endpoint(sql, owner.id, ok);
      const bad = await endpoint(sql, owner.id, down);
      down.failWith = 503;
      // The good one was failing: its first success brings it back.
      await sql`update webhook_endpoints set status = 'failing', failing_since = now() where id = ${good}`;
      const ids = await events(sql, owner.id, 3);
      const [group, ...more] = await claim(sql, 100);
      expect(more).toEqual([]);
      expect(group!.deliveries).toHaveLength(2 * ids.length);
      // One of the bad endpoint's deliveries has been failing for longer than the retry window: given up.
      const [oldest] = await sql<{ id: number }[]>`
        update webhook_deliveries set first_attempt_at = now() - ${`${DEFAULT_RETRY_SCHEDULE.windowMs + 60_000} milliseconds`}::interval
        where id = (select min(id) from webhook_deliveries where endpoint_id = ${bad}) returning id`;

      const counted = counting(sql);
      const signers = new SignerCache();
      const result = await deliverGroup(deps(counted.sql, { signers }), group!);
      expect(result).toEqual({
        read: 2 * ids.length,
        carried: 2 * ids.length,
        sent: 2 * ids.length,
        recorded: 2 * ids.length,
        dropped: 0,
      });
      // The whole group: one statement reads it, one records it (endpoints included).
      expect(counted.statements()).toBe(2);
      // Each endpoint's secret decrypted once for the job, not once per delivery.
      expect(signers.decrypted).toBe(2);
      expect(new Set(ok.events.keys())).toEqual(new Set(ids));
      expect(ok.invalid).toBe(0);
      expect(down.deliveries).toBe(ids.length);

      const rows = await sql<
        { id: number; endpoint_id: string; status: string; attempts: number; response_status: number; response_body: string }[]
      >`select id, endpoint_id, status, attempts, response_status, response_body, enqueued_at, job_id
        from webhook_deliveries where endpoint_id in (${good}, ${bad}) order by id`;
      expect(rows).toHaveLength(2 * ids.length);
      for (const r of rows) {
        expect(r).toMatchObject({ attempts: 1, enqueued_at: null, job_id: null });
        if (r.endpoint_id === good) expect(r).toMatchObject({ status: 'delivered', response_status: 204 });
        else if (r.id === oldest!.id) expect(r).toMatchObject({ status: 'failed', response_status: 503 });
        else expect(r).toMatchObject({ status: 'pending', response_status: 503, response_body: 'receiver failing on purpose' });
      }
      const endpoints = await sql<{ id: string; status: string; failing_since: Date | null }[]>`
        select id, status, failing_since from webhook_endpoints where id in (${good}, ${bad})`;
      expect(Object.fromEntries(endpoints.map((e) => [e.id, [e.status, e.failing_since !== null]]))).toEqual({
        [good]: ['enabled', false],
        [bad]: ['failing', true],
      });

      // The same job again (a duplicate, or BullMQ running it twice): nothing sent, nothing written.
      const again = await deliverGroup(deps(sql, { signers }), group!);
      expect(again).toMatchObject({ read: 2 * ids.length, carried: 0, sent: 0, recorded: 0 });
      expect(ok.deliveries + down.deliveries).toBe(2 * ids.length);
    } finally {
      await ok.close();
      await down.close();
    }
  });

  test('a stale job (its deliveries handed over again to another) sends nothing; a deleted endpoint is dropped', async ({
    database,
    owner,
    receiver,
  }) => {
    const { sql } = database;
    await quiet(sql);
    const live = await endpoint(sql, owner.id, receiver);
    const gone = await endpoint(sql, owner.id, receiver);
    const ids = await events(sql, owner.id, 2);
    const [stale] = await claim(sql, 100);
    const all = stale!.deliveries.map((d) => d.id);
    // The queue lost it (as the reconciler decides), and the same attempts went out again, grouped otherwise.
    await handOverAgain(sql, all);
    const regrouped = await claim(sql, ids.length);
    expect(regrouped.map((g) => g.jobId)).not.toContain(stale!.jobId);
    expect(regrouped.flatMap((g) => g.deliveries.map((d) => d.id)).sort()).toEqual([...all].sort());

    expect(await deliverGroup(deps(sql), stale!)).toMatchObject({ read: all.length, carried: 0, sent: 0, recorded: 0 });
    expect(receiver.deliveries).toBe(0);

    // The endpoint is deleted under its pending deliveries: they are dropped, not sent.
    await sql`update webhook_endpoints set deleted_at = now() where id = ${gone}`;
    const results: GroupResult[] = [];
    for (const g of regrouped) results.push(await deliverGroup(deps(sql), g));
    const sum = (k: 'sent' | 'dropped' | 'recorded') => results.reduce((a, r) => a + r[k], 0);
    expect([sum('sent'), sum('dropped'), sum('recorded')]).toEqual([ids.length, ids.length, 2 * ids.length]);
    expect(new Set(receiver.events.keys())).toEqual(new Set(ids));
    expect(receiver.deliveries).toBe(ids.length);
    const rows = await sql<{ endpoint_id: string; status: string; attempts: number; error: string | null }[]>`
      select endpoint_id, status, attempts, error from webhook_deliveries where endpoint_id in (${live}, ${gone}) order by id`;
    expect(rows).toHaveLength(2 * ids.length);
    for (const r of rows) {
      if (r.endpoint_id === live) expect(r).toMatchObject({ status: 'delivered', attempts: 1, error: null });
      else expect(r).toMatchObject({ status: 'failed', attempts: 0, error: 'endpoint deleted' });
    }
  });

  test('a delivery whose event is gone (purged while it was replayed) is dropped, not sent and not left pending', async ({
    database,
    owner,
    receiver,
  }) => {
    const { sql } = database;
    await quiet(sql);
    const id = await endpoint(sql, owner.id, receiver);
    const [kept, purged] = await events(sql, owner.id, 2);
    const groups = await claim(sql, 100);
    // A delivery names its event without a foreign key: the event can go from under it.
    await sql`delete from events where id = ${purged!}`;
    const results: GroupResult[] = [];
    for (const g of groups) results.push(await deliverGroup(deps(sql), g));
    expect(results.reduce((a, r) => a + r.dropped, 0)).toBe(1);
    expect([...receiver.events.keys()]).toEqual([kept]);
    const rows = await sql<{ event_id: string; status: string; attempts: number; error: string | null }[]>`
      select event_id, status, attempts, error from webhook_deliveries where endpoint_id = ${id} order by id`;
    expect(rows).toEqual([
      { event_id: kept, status: 'delivered', attempts: 1, error: null },
      { event_id: purged, status: 'failed', attempts: 0, error: 'event deleted past retention' },
    ]);
  });

  test('a rotated secret is decrypted again; the cached signers serve the next jobs until then', async ({
    database,
    owner,
    receiver,
  }) => {
    const { sql } = database;
    await quiet(sql);
    const id = await endpoint(sql, owner.id, receiver);
    const signers = new SignerCache();
    await events(sql, owner.id, 1);
    for (const g of await claim(sql, 100)) await deliverGroup(deps(sql, { signers }), g);
    await events(sql, owner.id, 1);
    for (const g of await claim(sql, 100)) await deliverGroup(deps(sql, { signers }), g);
    expect(signers.decrypted).toBe(1);
    const next = newWebhookSecret();
    await sql`update webhook_endpoints set previous_secret_enc = secret_enc, secret_enc = ${encryptSecret(next, key, id)},
      previous_secret_expires_at = now() + interval '1 day' where id = ${id}`;
    receiver.secrets = [...receiver.secrets, next];
    receiver.requireAllSecrets = true;
    await events(sql, owner.id, 1);
    for (const g of await claim(sql, 100)) await deliverGroup(deps(sql, { signers }), g);
    // Both, new and previous: the cached pair no longer matches the stored ciphertexts.
    expect(signers.decrypted).toBe(3);
    expect(receiver.events.size).toBe(3);
    expect(receiver.invalid).toBe(0);
  });

  test('the pump hands due deliveries to the queue as one job per group of at most WEBHOOK_DELIVERY_BATCH', async ({
    database,
    owner,
    receiver,
  }) => {
    const { sql } = database;
    await quiet(sql);
    const groupSize = 7;
    await endpoint(sql, owner.id, receiver);
    await endpoint(sql, owner.id, receiver);
    const ids = await events(sql, owner.id, 2 * groupSize + 2);
    const deliveries = 2 * ids.length;
    const added: DeliveryGroup[] = [];
    const queue = {
      depth: async () => 0,
      add: async (groups: DeliveryGroup[]) => {
        added.push(...groups);
      },
    } as unknown as DeliveryQueue;
    const pump = pumpOver(sql, queue, { groupSize });
    await pump.step();
    expect(added).toHaveLength(Math.ceil(deliveries / groupSize));
    expect(Math.max(...added.map((g) => g.deliveries.length))).toBe(groupSize);
    const handed = added.flatMap((g) => g.deliveries.map((d) => d.id));
    expect(new Set(handed).size).toBe(deliveries);
    const [row] = await sql<{ n: number; jobs: number }[]>`
      select count(*)::int as n, count(distinct job_id)::int as jobs from webhook_deliveries where enqueued_at is not null`;
    expect(row).toEqual({ n: deliveries, jobs: added.length });
    // A queue that already holds the high-water mark gets nothing more.
    await events(sql, owner.id, 1);
    const full = pumpOver(sql, { depth: async () => 2, add: queue.add } as unknown as DeliveryQueue, {
      groupSize,
      highWater: 2 * groupSize,
    });
    const before = added.length;
    await full.step();
    expect(added.length).toBe(before);
  });
  test('a failed add leaves the deliveries handed over to their jobs, for the reconciler to add again', async ({
    database,
    owner,
    receiver,
  }) => {
    const { sql } = database;
    await quiet(sql);
    const endpointId = await endpoint(sql, owner.id, receiver);
    await events(sql, owner.id, 3);
    const tried: DeliveryGroup[] = [];
    const queue = {
      depth: async () => 0,
      add: async (groups: DeliveryGroup[]) => {
        tried.push(...groups);
        throw new Error('Command timed out'); // it may have reached Redis all the same
      },
    } as unknown as DeliveryQueue;
    const pump = pumpOver(sql, queue, { groupSize: 2 });
    await expect(pump.step()).rejects.toThrow('Command timed out');
    expect(tried).toHaveLength(2);
    const rows = await sql<{ id: number; job_id: string | null; enqueued_at: Date | null }[]>`
      select id, job_id, enqueued_at from webhook_deliveries where endpoint_id = ${endpointId} order by id`;
    expect(rows).toHaveLength(3);
    const jobOf = new Map(tried.flatMap((g) => g.deliveries.map((d) => [d.id, g.jobId] as const)));
    for (const r of rows) expect([r.job_id, r.enqueued_at !== null]).toEqual([jobOf.get(Number(r.id)), true]);
    // Not due again: no second job can be made of them beside one that may exist.
    expect(await claimDueDeliveries(sql, 100, 2)).toEqual([]);
  });
  test('an idle pump asks PostgreSQL one probe per step; it looks at the queue when deliveries appear, or once in dispatchEveryMs', async ({
    database,
    owner,
    receiver,
  }) => {
    const { sql } = database;
    await quiet(sql);
    await endpoint(sql, owner.id, receiver);
    let depthCalls = 0;
    const added: DeliveryGroup[] = [];
    const queue = {
      depth: async () => {
        depthCalls++;
        return 0;
      },
      add: async (groups: DeliveryGroup[]) => {
        added.push(...groups);
      },
    } as unknown as DeliveryQueue;
    const counted = counting(sql);
    const pump = pumpOver(counted.sql, queue, { dispatchEveryMs: 3_600_000 });
    await pump.step(); // the first step looks at everything (and purges, hourly)
    const [depth0, statements0] = [depthCalls, counted.statements()];
    for (let i = 0; i < 5; i++) await pump.step();
    expect(depthCalls).toBe(depth0);
    expect(counted.statements() - statements0).toBe(5);
    // New events: published, and their deliveries handed over in the same step.
    const ids = Array.from({ length: 3 }, () => newId('evt'));
    await insertEvents(
      sql,
      ids.map((id) => ({
        id,
        ownerId: owner.id,
        type: 'payout.created' as const,
        questId: null,
        allocationId: null,
        batchId: null,
        data: {},
        createdAt: new Date(),
      })),
    );
    await pump.step();
    expect(depthCalls).toBe(depth0 + 1);
    expect(added.flatMap((g) => g.deliveries).length).toBe(3);
  });
});
