import { assignPartitions, DomainError } from '@quest/domain';
import { membersKey, partitionsKey, QueueStatsReader, reconcilerLastRunKey, redisConnection } from '@quest/queue';
import type { FastifyInstance } from 'fastify';
import type { ConsoleContext } from './context.ts';
import { fmt, html, when } from './html.ts';
import { operator } from './operator.ts';

/**
 * The operator's view of the worker pool: live members and the partitions each owns, queue depth per
 * partition, the oldest waiting job and the reconciler's last run, read from Redis on a short-lived
 * connection of its own (a Redis that is away answers QUEUE_UNAVAILABLE, not a hang).
 */
export function operatorPoolRoutes(app: FastifyInstance, ctx: ConsoleContext): void {
  const { deps } = ctx;
  app.get('/operator/pool', operator, async (request, reply) => {
    const { config } = deps;
    const redis = redisConnection(config.REDIS_URL, {
      maxRetriesPerRequest: 1,
      connectTimeout: 2000,
      commandTimeout: 5000,
      retryStrategy: () => null,
      lazyConnect: true,
    });
    redis.on('error', () => {});
    try {
      await redis.connect().catch(() => {
        throw new DomainError('QUEUE_UNAVAILABLE');
      });
      const [seconds, micros] = await redis.time();
      const redisNow = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
      const recorded = await redis.get(partitionsKey(config.QUEUE_PREFIX));
      const partitions = recorded ? Number(recorded) : config.QUEUE_PARTITIONS;
      const flat = await redis.zrangebyscore(membersKey(config.QUEUE_PREFIX), redisNow, '+inf', 'WITHSCORES');
      const ids: string[] = [];
      for (let i = 0; i < flat.length; i += 2) ids.push(flat[i]!);
      ids.sort();
      const reader = new QueueStatsReader(redis, config.QUEUE_PREFIX, partitions);
      const queues = await reader.read().finally(() => reader.close());
      const last = await redis.get(reconcilerLastRunKey(config.QUEUE_PREFIX));
      let reconciler = 'never';
      if (last) {
        try {
          const parsed = JSON.parse(last) as { at?: string | number; finishedAt?: string | number };
          const at = parsed.finishedAt ?? parsed.at;
          reconciler = at === undefined ? last.slice(0, 200) : when(new Date(at));
        } catch {
          reconciler = last.slice(0, 200);
        }
      }
      const waiting = queues.reduce((n, q) => n + q.waiting, 0);
      const oldest = queues.reduce<number | null>(
        (o, q) => (q.oldestWaitingAt === null ? o : o === null ? q.oldestWaitingAt : Math.min(o, q.oldestWaitingAt)),
        null,
      );
      const body = html`
        <p>${fmt(ids.length)} live worker${ids.length === 1 ? '' : 's'} · ${fmt(partitions)} partitions · ${fmt(waiting)} jobs waiting ·
          oldest waiting job: ${oldest === null ? 'none' : `${fmt(Math.round((redisNow - oldest) / 100) / 10)} s old`} ·
          reconciler's last run: ${reconciler}. <a href="/admin/queues">Open the queue console</a>.</p>
        <h2>Workers</h2>
        ${
          ids.length === 0
            ? html`<p role="alert" class="error">No live worker: nothing is being credited.</p>`
            : html`<div class="table-wrap"><table><thead><tr><th scope="col">Worker</th><th scope="col">Partitions</th></tr></thead><tbody>${ids.map(
                (id) => html`<tr><td><code>${id}</code></td><td>${assignPartitions(ids, id, partitions).join(', ')}</td></tr>`,
              )}</tbody></table></div>`
        }
        <h2>Partitions</h2>
        <div class="table-wrap"><table><thead><tr><th scope="col" class="num">Partition</th><th scope="col" class="num">Waiting</th><th scope="col" class="num">Active</th><th scope="col">Oldest waiting</th></tr></thead>
        <tbody>${queues.map(
          (
            q,
          ) => html`<tr><td class="num">${q.partition}</td><td class="num">${fmt(q.waiting)}</td><td class="num">${fmt(q.active)}</td>
            <td>${q.oldestWaitingAt === null ? '—' : when(new Date(q.oldestWaitingAt))}</td></tr>`,
        )}</tbody></table></div>`;
      return ctx.page(reply, { title: 'Worker pool', request, body });
    } finally {
      redis.disconnect();
    }
  });
}
