import { describeUrl } from '@quest/config/urls';
import { pendingWork } from '@quest/db';
import { assignPartitions } from '@quest/domain';
import { membersKey, partitionsKey, QueueStatsReader, reconcilerLastRunKey, redisConnection } from '@quest/queue';
import { CliError, type CommandOutput, type Context } from '../context.ts';
import { renderFields, renderTable } from '../format.ts';

const ageSeconds = (at: Date | number | null, now: number) =>
  at === null ? null : Math.max(0, Math.round((now - (typeof at === 'number' ? at : at.getTime())) / 100) / 10);

/** Where Redis is, for messages: never the password. */
function describeRedis(url: string): string {
  return describeUrl(url, 'the configured Redis');
}

interface PoolView {
  partitions: number;
  members: { id: string; expiresAt: number; partitions: number[] }[];
  queues: Awaited<ReturnType<QueueStatsReader['read']>>;
  reconciler: unknown;
  redisNow: number;
}

/**
 * The pool as Redis holds it: live members (the same sorted set and the same `assignPartitions`
 * deal the workers use, so the listed ownership is what the workers converge to within a
 * heartbeat), each partition queue's depth, and the reconciler's last run.
 */
async function readPool(url: string, prefix: string, configuredPartitions: number): Promise<PoolView> {
  const redis = redisConnection(url, {
    maxRetriesPerRequest: 1,
    connectTimeout: 2000,
    commandTimeout: 5000,
    retryStrategy: () => null,
    lazyConnect: true,
  });
  redis.on('error', () => {});
  try {
    await redis.connect().catch((error: unknown) => {
      throw new CliError('REDIS_UNAVAILABLE', `cannot reach Redis at ${describeRedis(url)}: ${(error as Error).message}`);
    });
    const [seconds, micros] = await redis.time();
    const redisNow = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
    const recorded = await redis.get(partitionsKey(prefix));
    const partitions = recorded ? Number(recorded) : configuredPartitions;
    const flat = await redis.zrangebyscore(membersKey(prefix), redisNow, '+inf', 'WITHSCORES');
    const live: { id: string; expiresAt: number }[] = [];
    for (let i = 0; i < flat.length; i += 2) live.push({ id: flat[i]!, expiresAt: Number(flat[i + 1]) });
    const ids = live.map((m) => m.id);
    const members = live
      .map((m) => ({ ...m, partitions: assignPartitions(ids, m.id, partitions) }))
      .sort((a, b) => a.id.localeCompare(b.id));
    const reader = new QueueStatsReader(redis, prefix, partitions);
    const queues = await reader.read().finally(() => reader.close());
    const last = await redis.get(reconcilerLastRunKey(prefix));
    let reconciler: unknown = null;
    if (last) {
      try {
        reconciler = JSON.parse(last);
      } catch {
        reconciler = last;
      }
    }
    return { partitions, members, queues, reconciler, redisNow };
  } finally {
    redis.disconnect();
  }
}

export async function statusCommand(ctx: Context): Promise<CommandOutput> {
  const { REDIS_URL, QUEUE_PREFIX, QUEUE_PARTITIONS } = ctx.config;
  const [pool, work] = await Promise.all([
    readPool(REDIS_URL, QUEUE_PREFIX, QUEUE_PARTITIONS),
    ctx.db().then((sql) => pendingWork(sql)),
  ]);
  const now = Date.now();
  const queues = pool.queues.map((q) => ({
    partition: q.partition,
    waiting: q.waiting,
    active: q.active,
    oldestWaitSeconds: q.oldestWaitingAt === null ? null : ageSeconds(q.oldestWaitingAt, pool.redisNow),
  }));
  const owner = new Map<number, string>();
  for (const m of pool.members) for (const p of m.partitions) owner.set(p, m.id);
  const json = {
    prefix: QUEUE_PREFIX,
    partitions: pool.partitions,
    pool: { members: pool.members.map((m) => ({ id: m.id, partitions: m.partitions })) },
    queues,
    pending: {
      requests: { ...work.requests, oldestAgeSeconds: ageSeconds(work.requests.oldestEnqueuedAt, now) },
      batches: { ...work.batches, oldestAgeSeconds: ageSeconds(work.batches.oldestCreatedAt, now) },
    },
    reconciler: { lastRun: pool.reconciler },
  };
  const last = pool.reconciler as { at?: string } | null;
  const text = [
    renderFields('pool', [
      ['prefix', QUEUE_PREFIX],
      ['partitions', pool.partitions],
      ['members', pool.members.length],
    ]),
    pool.members.length
      ? renderTable(
          ['member', 'partitions'],
          pool.members.map((m) => [m.id, m.partitions.join(',')]),
        )
      : '(no live worker: nothing is being decided)',
    '',
    renderTable(
      ['partition', 'owner', 'waiting', 'active', 'oldest wait s'],
      queues.map((q) => [q.partition, owner.get(q.partition) ?? '-', q.waiting, q.active, q.oldestWaitSeconds ?? '-']),
    ),
    '',
    renderFields('pending in PostgreSQL', [
      ['202 requests', work.requests.count],
      ['  oldest age s', json.pending.requests.oldestAgeSeconds],
      ['  older than 1 min', work.requests.olderThan1m],
      ['  older than 10 min', work.requests.olderThan10m],
      ['unfinished batches', work.batches.count],
      ['  pending / processing', `${work.batches.pending} / ${work.batches.processing}`],
      ['  oldest age s', json.pending.batches.oldestAgeSeconds],
      ['  older than 1 min', work.batches.olderThan1m],
      ['  older than 10 min', work.batches.olderThan10m],
    ]),
    '',
    renderFields('reconciler', [['last run', last ? (typeof last === 'object' ? JSON.stringify(last) : String(last)) : 'never']]),
  ].join('\n');
  return { json, text };
}
