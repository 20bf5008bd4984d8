import { DomainError } from '@quest/domain';
import { readPoolSnapshot } from '@quest/queue';
import type { FastifyInstance } from 'fastify';
import { type ConsoleContext, OPERATOR } from '../context.ts';
import { counted, fmt, html, when } from '../html.ts';

/**
 * The operator's view of the worker pool: live members and the partitions each owns, queue depth per
 * partition, the oldest waiting job and the reconciler's last run (`readPoolSnapshot`, as
 * `quest-admin status` reads them; a Redis that is away answers QUEUE_UNAVAILABLE, not a hang).
 */
export function operatorPoolRoutes(app: FastifyInstance, ctx: ConsoleContext): void {
  const { deps } = ctx;
  app.get('/operator/pool', OPERATOR, async (request, reply) => {
    const { config } = deps;
    const {
      partitions,
      members,
      queues,
      reconcilerLastRun: last,
      redisNow,
    } = await readPoolSnapshot(
      config.REDIS_URL,
      config.QUEUE_PREFIX,
      config.QUEUE_PARTITIONS,
      () => new DomainError('QUEUE_UNAVAILABLE'),
    );
    const workers = [...members].sort((x, y) => (x.id < y.id ? -1 : x.id > y.id ? 1 : 0));
    let reconciler = 'never';
    if (last) {
      try {
        const { at } = JSON.parse(last) as { at?: string | number };
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
        <p>${counted(workers.length, 'live worker')} · ${fmt(partitions)} partitions · ${fmt(waiting)} jobs waiting ·
          oldest waiting job: ${oldest === null ? 'none' : `${fmt(Math.round((redisNow - oldest) / 100) / 10)} s old`} ·
          reconciler's last run: ${reconciler}. <a href="/admin/queues">Open the queue console</a>.</p>
        <h2>Workers</h2>
        ${
          workers.length === 0
            ? html`<p role="alert" class="error">No live worker: nothing is being credited.</p>`
            : html`<div class="table-wrap"><table><thead><tr><th scope="col">Worker</th><th scope="col">Partitions</th></tr></thead><tbody>${workers.map(
                (w) => html`<tr><td><code>${w.id}</code></td><td>${w.partitions.join(', ')}</td></tr>`,
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
  });
}
