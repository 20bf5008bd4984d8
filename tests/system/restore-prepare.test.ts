import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { idempotentRequestKey } from '@quest/domain';
import { partitionQueueName } from '@quest/queue';
import { runCli } from '@quest/testing/cli';
import {
  createOwner,
  createPayouts,
  createQuests,
  createTestDatabase,
  createTestRedis,
  type TestDatabase,
  type TestRedis,
} from '@quest/testing';
import { createAccount } from '@quest/testing/seed';

/**
 * `quest-admin restore prepare` against a ledger and a Redis that disagree, as after a restore:
 * what Redis remembers beyond the ledger is reported as rewound, a live worker stops the fence, and
 * the fence deletes the old queue but keeps the Idempotency-Key claims.
 */

let db: TestDatabase;
let rd: TestRedis;
let redis: Redis;
beforeAll(async () => {
  [db, rd] = await Promise.all([createTestDatabase(), createTestRedis()]);
  redis = new Redis(rd.url);
});
afterAll(async () => {
  redis.disconnect();
  await Promise.all([db.drop(), rd.cleanup()]);
});

const prepare = (...args: string[]) =>
  runCli(['--json', 'restore', 'prepare', ...args], {
    env: {
      ...process.env,
      ENV_FILE: '/dev/null',
      DATABASE_URL: db.url,
      REDIS_URL: rd.url,
      QUEUE_PREFIX: rd.prefix,
      QUEUE_PARTITIONS: '2',
    },
    timeoutMs: 60_000,
  });

describe('quest-admin restore prepare', () => {
  test('reports what Redis knows beyond the ledger, refuses while a worker lives, then fences all but the claims', {
    timeout: 120_000,
  }, async () => {
    const owner = await createOwner(db.sql);
    const [questId] = await createQuests(db.sql, 1, { ownerId: owner.id, totalPoints: 1000 });
    const account = await createAccount(db.sql);
    const [kept] = await createPayouts(db.sql, questId!, account, [5]);
    const [keptRow] = await db.sql<{ request_key: string }[]>`select request_key from payouts where id = ${kept!.id}`;
    const keptKey = keptRow!.request_key;
    const rewoundClaim = idempotentRequestKey(owner.id, questId!, 'after-the-target', 'alc');
    const rewoundJobItem = idempotentRequestKey(owner.id, questId!, 'queued-after-the-target', 'alc');
    const p = rd.prefix;
    await redis.set(`${p}:idem:${keptKey}`, 'digest');
    await redis.set(`${p}:idem:${rewoundClaim}`, 'digest');
    const queue = `${p}:${partitionQueueName(questId! % 2)}`;
    await redis.hset(
      `${queue}:7`,
      'name',
      'allocate',
      'data',
      JSON.stringify({
        items: [
          { key: keptKey, questId },
          { key: rewoundJobItem, questId },
        ],
      }),
    );
    await redis.rpush(`${queue}:wait`, '7');
    await redis.zadd(`${p}:{pool}:members`, Date.now() + 60_000, 'w-live');

    const refused = await prepare();
    expect(refused.code, refused.output).toBe(1);
    const report = JSON.parse(refused.stdout);
    expect(report.rewound).toEqual({ count: 2, keys: [rewoundClaim, rewoundJobItem].sort() });
    expect(report.ledger.payouts).toBe(1);
    expect(report.fence).toEqual({ done: false, reason: expect.stringContaining('1 worker') });
    expect(await redis.exists(`${queue}:7`, `${queue}:wait`)).toBe(2);

    const dry = await prepare('--dry-run');
    expect(dry.code, dry.output).toBe(0);
    expect(JSON.parse(dry.stdout).fence.done).toBe(false);

    await redis.del(`${p}:{pool}:members`);
    const fenced = await prepare();
    expect(fenced.code, fenced.output).toBe(0);
    expect(JSON.parse(fenced.stdout).fence).toEqual({ done: true, keysDeleted: 2 });
    expect((await redis.keys(`${p}:*`)).sort()).toEqual([`${p}:idem:${keptKey}`, `${p}:idem:${rewoundClaim}`].sort());
  });
});
