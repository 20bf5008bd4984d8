import { describeUrl } from '@quest/config/urls';
import { pendingWork } from '@quest/db';
import { readPoolSnapshot } from '@quest/queue';
import { CliError, type CommandOutput, type Context } from '../context.ts';
import { renderFields, renderTable } from '../format.ts';

const ageSeconds = (at: Date | number | null, now: number) =>
  at === null ? null : Math.max(0, Math.round((now - (typeof at === 'number' ? at : at.getTime())) / 100) / 10);

/** Where Redis is, for messages: never the password. */
function describeRedis(url: string): string {
  return describeUrl(url, 'the configured Redis');
}

/** `readPoolSnapshot` with the reconciler's record parsed (kept as text when it is not JSON) and members by id. */
async function readPool(url: string, prefix: string, configuredPartitions: number) {
  const snapshot = await readPoolSnapshot(
    url,
    prefix,
    configuredPartitions,
    (error) => new CliError('REDIS_UNAVAILABLE', `cannot reach Redis at ${describeRedis(url)}: ${error.message}`),
  );
  let reconciler: unknown = null;
  if (snapshot.reconcilerLastRun) {
    try {
      reconciler = JSON.parse(snapshot.reconcilerLastRun);
    } catch {
      reconciler = snapshot.reconcilerLastRun;
    }
  }
  const members = [...snapshot.members].sort((a, b) => a.id.localeCompare(b.id));
  return { ...snapshot, members, reconciler };
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
