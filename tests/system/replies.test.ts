import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { describe, expect, vi } from 'vitest';
import { partitionOf } from '@quest/domain';
import { deleteKeysWithPrefix, partitionQueueName } from '@quest/queue';
import {
  createAccounts,
  parseMetrics,
  post,
  type ServiceProcess,
  settle,
  startApiProcess,
  type System,
  systemTest,
} from '@quest/testing';

const PARTITIONS = 4;
const test = systemTest({ workers: 2, partitions: PARTITIONS });

/** The reply stream an API process announced at start-up ("reply stream" log line). */
function replyKeyOf(api: ServiceProcess): string {
  for (const line of api.output().split('\n')) {
    if (!line.includes('"msg":"reply stream"')) continue;
    const key = (JSON.parse(line) as { replyKey?: string }).replyKey;
    if (key) return key;
  }
  throw new Error(`no reply stream in the API's output:\n${api.output().slice(-2000)}`);
}

/** Every allocate job of the system's queues: its reply address and token, and the request ids of its items. */
async function allocateJobs(system: System) {
  const jobs: { token: string; replyTo: string | undefined; requestIds: string[] }[] = [];
  for (let p = 0; p < PARTITIONS; p++) {
    const q = new Queue(partitionQueueName(p), { connection: { url: system.redis.url } as never, prefix: system.redis.prefix });
    for (const job of await q.getJobs(['completed'], 0, -1)) {
      if (job.name !== 'allocate') continue;
      jobs.push({
        token: job.data.reply?.token,
        replyTo: job.data.reply?.to,
        requestIds: job.data.items.map((i: { requestId?: string }) => i.requestId ?? ''),
      });
    }
    await q.close();
  }
  return jobs;
}

/** The reply tokens a reply stream holds replies for. */
async function repliedJobs(redis: Redis, key: string): Promise<string[]> {
  const entries = await redis.xrange(key, '-', '+');
  return entries.filter(([, f]) => f[0] === 'j').map(([, f]) => f[1]!);
}

const at = (system: System, baseUrl: string): System => ({ ...system, baseUrl });
const metric = async (baseUrl: string, labels: Record<string, string>) =>
  parseMetrics(await (await fetch(`${baseUrl}/metrics`)).text()).sum('quest_reply_fallback_items_total', labels);

describe('reply streams', () => {
  test('each API process receives the replies of its own jobs, and only those', async ({
    system,
    database,
    owner,
    makeQuest,
    onTestFinished,
  }) => {
    const redis = new Redis(system.redis.url);
    onTestFinished(() => redis.disconnect());
    const second = await startApiProcess(system.env);
    onTestFinished(async () => {
      await second.process.stop('SIGKILL');
    });
    const [keyA, keyB] = [replyKeyOf(system.api), replyKeyOf(second.process)];
    expect(keyA).not.toBe(keyB);
    // One key per process, hash-tagged on the process id (one cluster slot).
    expect(keyA).toMatch(new RegExp(`^${system.redis.prefix}:reply:\\{[^{}]+\\}$`));

    // Both processes send to the same quests (every partition), each to accounts of its own, so a
    // payout handed to the wrong waiter would show up as the wrong account.
    const quests = await Promise.all(Array.from({ length: 2 * PARTITIONS }, () => makeQuest()));
    const accounts = await createAccounts(database.sql, 80);
    const N = 60;
    const send = (sys: System, tag: 'A' | 'B', i: number) => {
      const address = accounts[(tag === 'A' ? 0 : 40) + (i % 40)]!;
      return post(
        sys,
        `/quests/${quests[i % quests.length]}`,
        { points: 1, address },
        { 'x-api-key': owner.apiKey, 'x-request-id': `${tag}-${i}` },
      ).then((res) => ({ res, address }));
    };
    const answers = await Promise.all(
      Array.from({ length: N }, (_, i) => [send(system, 'A', i), send(at(system, second.baseUrl), 'B', i)]).flat(),
    );
    expect(answers.map((a) => a.res.status)).toEqual(answers.map(() => 200));
    for (const { res, address } of answers) expect(res.body.payout.account.pass).toBe(address);
    const ids = answers.map((a) => a.res.body.payout.id as string);
    expect(new Set(ids).size).toBe(2 * N);
    const [stored] = await database.sql<{ n: number }[]>`select count(*)::int as n from payouts where id = any(${ids})`;
    expect(stored?.n).toBe(2 * N);

    // A job carries the stream of the process that queued it (each process coalesces only its own
    // requests), and each stream holds the replies of exactly that process's jobs.
    const jobs = await allocateJobs(system);
    const byTag = { A: [] as string[], B: [] as string[] };
    for (const job of jobs) {
      const tags = new Set(job.requestIds.map((id) => id.split('-')[0]));
      expect(tags.size).toBe(1);
      const tag = [...tags][0] as 'A' | 'B';
      expect(job.replyTo).toBe(tag === 'A' ? keyA : keyB);
      byTag[tag].push(job.token);
    }
    expect((await repliedJobs(redis, keyA)).sort()).toEqual(byTag.A.sort());
    expect((await repliedJobs(redis, keyB)).sort()).toEqual(byTag.B.sort());

    // One blocking reader per API process, and no BullMQ QueueEvents reading the partitions' events.
    const clients = String(await redis.client('LIST')).split('\n');
    expect(clients.filter((l) => l.includes(` name=${system.redis.prefix}:reply-reader `))).toHaveLength(2);
    expect(clients.filter((l) => new RegExp(` name=${system.redis.prefix}:\\S*:qe `).test(l))).toEqual([]);

    // The stream lives on an expiry its process refreshes, and goes with a graceful stop.
    expect(await redis.pttl(keyB)).toBeGreaterThan(0);
    await second.process.stop('SIGTERM');
    expect(await redis.exists(keyB)).toBe(0);
    expect(await redis.exists(keyA)).toBe(1);
  });

  test('a reply that never comes: the finished job is answered from PostgreSQL, a decision like any other', async ({
    system,
    database,
    owner,
    makeQuest,
    accounts,
    onTestFinished,
  }) => {
    const redis = new Redis(system.redis.url);
    onTestFinished(() => redis.disconnect());
    const api = await startApiProcess({ ...system.env, ALLOCATION_WAIT_MS: '1500' });
    onTestFinished(async () => {
      await api.process.stop('SIGKILL');
    });
    const key = replyKeyOf(api.process);
    const sys = at(system, api.baseUrl);
    const quest = await makeQuest({ totalPoints: 100 });
    const auth = { 'x-api-key': owner.apiKey };

    // Replace the stream by a plain string: the worker's append fails (the reply is lost) and the
    // API, which sees its key still there, keeps it (nothing re-creates the stream meanwhile).
    await redis.multi().del(key).set(key, 'not a stream').exec();
    const paid = await post(sys, `/quests/${quest}`, { points: 60, address: accounts[0] }, auth);
    expect(paid.status).toBe(200);
    const [row] = await database.sql<{ id: string; amount: number }[]>`
      select id, amount::int from payouts where quest_id = ${quest}`;
    expect(paid.body.payout).toMatchObject({ id: row!.id, amount: 60, account: { pass: accounts[0] } });
    const refused = await post(sys, `/quests/${quest}`, { points: 60, address: accounts[1] }, auth);
    expect(refused.status).toBe(400);
    expect(refused.body.code).toBe('INSUFFICIENT_POINTS');
    expect(await metric(api.baseUrl, { reason: 'timeout', result: 'decided' })).toBe(2);

    // The stream deleted outright: the API re-creates it, and replies flow again.
    await redis.del(key);
    await vi.waitFor(async () => expect(await redis.type(key)).toBe('stream'), { timeout: 10_000, interval: 50 });
    const again = await post(sys, `/quests/${quest}`, { points: 10, address: accounts[2] }, auth);
    expect(again.status).toBe(200);
    expect(await metric(api.baseUrl, {})).toBe(2);
  });

  test('a stream lost while a job waits: the waiter waits on for the reply to the re-created stream', async ({
    system,
    owner,
    quest,
    accounts,
    onTestFinished,
  }) => {
    const redis = new Redis(system.redis.url);
    onTestFinished(() => redis.disconnect());
    const api = await startApiProcess({ ...system.env, ALLOCATION_WAIT_MS: '20000' });
    onTestFinished(async () => {
      await api.process.stop('SIGKILL');
    });
    const key = replyKeyOf(api.process);
    const queue = new Queue(partitionQueueName(partitionOf(quest, PARTITIONS)), {
      connection: { url: system.redis.url } as never,
      prefix: system.redis.prefix,
    });
    onTestFinished(async () => {
      await queue.resume();
      await queue.close();
    });

    // Hold the quest's partition, queue a request, lose the stream while it waits.
    await queue.pause();
    const answer = post(
      at(system, api.baseUrl),
      `/quests/${quest}`,
      { points: 5, address: accounts[0] },
      { 'x-api-key': owner.apiKey },
    );
    const queued = async () => Object.values(await queue.getJobCounts('waiting', 'prioritized')).reduce((a, b) => a + b, 0);
    await vi.waitFor(async () => expect(await queued()).toBe(1), { timeout: 10_000, interval: 50 });
    const before = (await redis.xrange(key, '-', '+'))[0]![0];
    await redis.del(key);
    await vi.waitFor(
      async () => {
        expect(await redis.type(key)).toBe('stream');
        expect((await redis.xrange(key, '-', '+'))[0]![0]).not.toBe(before);
      },
      { timeout: 10_000, interval: 50 },
    );
    await queue.resume();
    const res = await answer;
    expect(res.status).toBe(200);
    expect(res.body.payout.amount).toBe(5);
    expect(await metric(api.baseUrl, {})).toBe(0);
  });
  test("a job id reused after Redis lost its data never hands another job's reply to a waiter", async ({
    system,
    database,
    owner,
    makeQuest,
    accounts,
    onTestFinished,
  }) => {
    const redis = new Redis(system.redis.url);
    onTestFinished(() => redis.disconnect());
    const api = await startApiProcess({ ...system.env, ALLOCATION_WAIT_MS: '1000' });
    onTestFinished(async () => {
      await api.process.stop('SIGKILL');
    });
    const sys = at(system, api.baseUrl);
    const auth = { 'x-api-key': owner.apiKey };
    const quest = await makeQuest();
    const name = partitionQueueName(partitionOf(quest, PARTITIONS));
    const queue = new Queue(name, { connection: { url: system.redis.url } as never, prefix: system.redis.prefix });
    onTestFinished(async () => {
      await queue.resume();
      await queue.close();
    });

    // A is answered 202 (its partition is held), then decided: its reply reaches the API process
    // after its waiter gave up, and is kept there for a waiter that may still come.
    await queue.pause();
    const first = await post(sys, `/quests/${quest}`, { points: 7, address: accounts[0] }, auth);
    expect(first.status).toBe(202);
    const [job] = await queue.getJobs(['waiting', 'prioritized']);
    await queue.resume();
    const decided = await settle(sys, first.headers.get('location')!, owner.apiKey);
    expect(decided.allocation.payout).toMatchObject({ amount: 7, account: { pass: accounts[0] } });

    // The queue's data is lost the way a failover to a replica that lagged loses it: the jobs are
    // gone and the id counter stands where it stood before A, so the next job gets A's id.
    await deleteKeysWithPrefix(redis, `${system.redis.prefix}:${name}`);
    await redis.set(`${system.redis.prefix}:${name}:id`, String(Number(job!.id) - 1));
    const second = await post(sys, `/quests/${quest}`, { points: 9, address: accounts[1] }, auth);
    const [reused] = await queue.getJobs(['completed', 'active', 'waiting']);
    expect(reused?.id).toBe(job!.id);
    // B is answered with its own decision, never with A's.
    expect(second.status).toBe(200);
    expect(second.body.payout).toMatchObject({ amount: 9, account: { pass: accounts[1] } });
    expect(second.body.payout.id).not.toBe(decided.allocation.payout.id);
    const paid = await database.sql<{ amount: number }[]>`select amount::int from payouts where quest_id = ${quest} order by seq`;
    expect(paid.map((p) => p.amount)).toEqual([7, 9]);
  });
});
