import type { Redis } from 'ioredis';
import { partitionQueueName } from '@quest/queue';

export interface JobStats {
  jobs: number;
  items: number;
  byWorker: Record<string, { jobs: number; items: number }>;
}

/** Allocation jobs finished between two instants, per worker (BullMQ's completed set is scored by finishedOn). */
export async function jobStats(
  redis: Redis,
  prefix: string,
  partitions: number,
  fromMs: number,
  toMs: number,
): Promise<JobStats> {
  const out: JobStats = { jobs: 0, items: 0, byWorker: {} };
  for (let p = 0; p < partitions; p++) {
    const q = `${prefix}:${partitionQueueName(p)}`;
    const ids = await redis.zrangebyscore(`${q}:completed`, fromMs, toMs);
    for (let i = 0; i < ids.length; i += 2000) {
      const pipe = redis.pipeline();
      for (const id of ids.slice(i, i + 2000)) pipe.hmget(`${q}:${id}`, 'name', 'pb', 'data');
      for (const [, v] of (await pipe.exec()) ?? []) {
        const [name, by, data] = (v ?? []) as (string | null)[];
        if (name !== 'allocate' || !data) continue;
        const items = (JSON.parse(data) as { items: unknown[] }).items.length;
        const w = (out.byWorker[by ?? '?'] ??= { jobs: 0, items: 0 });
        w.jobs++;
        w.items += items;
        out.jobs++;
        out.items += items;
      }
    }
  }
  return out;
}

export function shareText(stats: JobStats): string {
  const names = Object.keys(stats.byWorker).sort();
  if (!stats.items) return '—';
  return names
    .map((n) => `${n.replace(/^bench-/, '')} ${Math.round((100 * stats.byWorker[n]!.items) / stats.items)}%`)
    .join(' / ');
}
