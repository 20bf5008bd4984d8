import { type Job, Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { describe, expect, vi } from 'vitest';
import { test } from '@quest/testing';

/**
 * BullMQ's wake-up marker, as patched in `patches/bullmq+6.7.0.patch`. A partition queue has global
 * concurrency 1 and one consumer at a time (its leaseholder). Stock BullMQ 6.7 re-adds the marker
 * every time it hands out a job, even when nothing else is waiting, so after each job the owner's
 * next BZPOPMIN returned at once and its moveToActive found the queue empty: one wasted round trip
 * pair (a Lua script) per job. And it never adds one when a job finishes without fetching the next
 * (a closing worker, at a partition hand-over) while jobs wait that a maxed queue did not mark: the
 * new owner then slept until its drainDelay ran out. The patch adds the marker exactly when work is
 * left and nobody is taking it.
 */
describe('partition wake-up markers (patched BullMQ)', () => {
  test('handing out the last waiting job leaves no marker; handing out one of two leaves one', async ({
    redis,
    onTestFinished,
  }) => {
    const name = 'markers-take';
    const connection = new Redis(redis.url, { maxRetriesPerRequest: null });
    onTestFinished(() => connection.disconnect());
    const queue = new Queue(name, { connection, prefix: redis.prefix });
    const worker = new Worker(name, null, { connection, prefix: redis.prefix, autorun: false });
    onTestFinished(async () => {
      await worker.close();
      await queue.close();
    });
    const marker = `${redis.prefix}:${name}:marker`;

    await queue.add('a', { n: 1 });
    expect(await connection.zcard(marker)).toBe(1); // the add marks the queue
    await connection.del(marker); // as the owner's BZPOPMIN does before it asks for the job
    const a = (await worker.getNextJob('token-a')) as Job;
    expect(a.data).toEqual({ n: 1 });
    expect(await connection.zcard(marker)).toBe(0); // nothing left: nothing to wake anyone for

    await queue.addBulk([
      { name: 'b', data: { n: 2 } },
      { name: 'c', data: { n: 3 } },
    ]);
    await connection.del(marker);
    const b = (await worker.getNextJob('token-b')) as Job;
    expect(b.data).toEqual({ n: 2 });
    expect(await connection.zcard(marker)).toBe(1); // c waits: another consumer may take it
  });

  test('a job finished without fetching the next wakes the consumer blocked behind it', async ({ redis, onTestFinished }) => {
    const name = 'markers-handover';
    const connection = new Redis(redis.url, { maxRetriesPerRequest: null });
    onTestFinished(() => connection.disconnect());
    const queue = new Queue(name, { connection, prefix: redis.prefix });
    await queue.setGlobalConcurrency(1);
    // The old owner holds job a active, as a worker being closed at a hand-over does.
    const old = new Worker(name, null, { connection, prefix: redis.prefix, autorun: false });
    await queue.add('a', { n: 1 });
    const a = (await old.getNextJob('token-old')) as Job;
    expect(a.name).toBe('a');

    // The new owner starts: the queue is maxed (a is active), so it blocks on the marker. A drain
    // delay far longer than this test's timeout makes a missed wake-up fail the test, not slow it.
    const done: string[] = [];
    const successor = new Worker(
      name,
      async (job) => {
        done.push(job.name);
      },
      { connection: { ...connection.options }, prefix: redis.prefix, drainDelay: 3600, concurrency: 1 },
    );
    onTestFinished(async () => {
      await successor.close(true);
      await old.close(true);
      await queue.close();
    });
    // BullMQ names its workers' connections; getWorkers() is CLIENT LIST of those, parsed.
    const blockingClients = async () => (await queue.getWorkers()).filter((client) => client.cmd === 'bzpopmin');
    await vi.waitFor(
      async () => {
        expect(await blockingClients(), 'the successor blocked on the marker').toHaveLength(1);
        expect(await connection.zcard(`${redis.prefix}:${name}:marker`), 'markers left').toBe(0);
      },
      { timeout: 20_000, interval: 20 },
    );

    // b arrives while a is active: a maxed queue does not mark it.
    await queue.add('b', { n: 2 });
    // The old owner finishes a without fetching the next job (it is closing).
    await a.moveToCompleted('ok', 'token-old', false);

    await vi.waitFor(() => expect(done, 'jobs the successor ran').toContain('b'), { timeout: 30_000, interval: 20 });
    expect(done).toEqual(['b']);
  });
});
