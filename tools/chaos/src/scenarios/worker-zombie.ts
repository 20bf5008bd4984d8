import { Redis } from 'ioredis';
import { partitionQueueName } from '@quest/queue';
import type { Cluster } from '../cluster.ts';
import { type Scenario, waitUntil } from '../scenario.ts';

export const workerZombie: Scenario = {
  name: 'worker-zombie',
  fault: 'a worker `SIGSTOP`ped with a keyless job in hand before its transaction, `SIGCONT` after another worker decided it',
  workers: 2,
  redis: 'aof',
  credit: false,
  // One connection: a job of the worker's second partition waits for it, in hand but not yet looked up.
  firstWorkerEnv: { DATABASE_POOL_MAX: '1' },
  // The clients load the other worker's partitions, so the frozen worker holds exactly the jobs set up.
  loadQuests: (c) => {
    const owned = c.ownedPartitions(c.live('worker')[0]!);
    return c.questIds.filter((q) => !owned.includes(q % Number(c.env.QUEUE_PARTITIONS)));
  },
  inject: zombie,
};

/**
 * The zombie of issue 10, made deterministic: the checker holds quest A's row lock, so the first
 * worker's only connection waits in A's transaction, and a keyless request to quest B (also its
 * partition) is taken as a job but waits for that connection. The worker is frozen there, the lock
 * released; the pool moves its partitions and the other worker decides B; then it resumes and runs
 * B's job as a first delivery. B must stay completed, never stored or reported failed.
 */
async function zombie(c: Cluster, started: () => void): Promise<void> {
  const partitions = Number(c.env.QUEUE_PARTITIONS);
  const w = c.live('worker')[0]!;
  const owned = c.ownedPartitions(w);
  const [qa, qb] = c.questIds.filter((q) => owned.includes(q % partitions));
  if (qa === undefined || qb === undefined) throw new Error(`worker owns partitions ${owned}: need two of the quests'`);
  const post = (quest: number) =>
    fetch(`${c.baseUrl}/quests/${quest}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': c.owner.apiKey },
      body: JSON.stringify({ points: 1, address: c.accounts[0] }),
      signal: AbortSignal.timeout(30_000),
    }).then(async (r) => ({ status: r.status, body: (await r.json()) as { allocation?: { id: string } } }));
  let bKey: string | undefined;
  await c.sql.begin(async (tx) => {
    await tx`select 1 from quests where id = ${qa} for update`;
    void post(qa).catch(() => {});
    // Wait (bounded) until the worker's connection is blocked on A's lock, then send B.
    await waitUntil(
      async () => (await c.sql`select 1 from pg_locks where not granted and locktype in ('transactionid', 'tuple')`).length > 0,
      10_000,
    );
    const b = post(qb);
    const queue = `${c.env.QUEUE_PREFIX}:${partitionQueueName(qb % partitions)}`;
    const redis = new Redis(c.redis.url, { maxRetriesPerRequest: 1 });
    try {
      await waitUntil(async () => (await redis.llen(`${queue}:active`)) > 0, 10_000);
    } finally {
      redis.disconnect();
    }
    w.proc.child.kill('SIGSTOP');
    started();
    const res = await b; // 202 after ALLOCATION_WAIT_MS: the pending marker is written
    bKey = res.body.allocation?.id;
  });
  try {
    if (!bKey) throw new Error('the zombie request was not answered 202');
    const key = bKey;
    await waitUntil(
      async () => (await c.sql`select 1 from payouts where quest_id = ${qb} and request_key = ${key}`).length > 0,
      30_000,
    );
  } finally {
    w.proc.child.kill('SIGCONT');
  }
}
