import { claimDueDeliveries, publishEvents, purgeEvents, type Sql } from '@quest/db';
import type { DeliveryQueue } from '@quest/queue';
import { eventsPublished } from '../metrics.ts';

export interface PumpOptions {
  sql: Sql;
  queue: DeliveryQueue;
  /** Events numbered, and deliveries handed to the queue, per step. */
  pageSize: number;
  /** Most deliveries per queue job (WEBHOOK_DELIVERY_BATCH). */
  groupSize: number;
  /**
   * Most deliveries in Redis (waiting or running), counted as jobs × groupSize: the rest wait, due,
   * in PostgreSQL.
   */
  highWater: number;
  /** Pause when there was nothing to do. */
  idleMs: number;
  /**
   * Look for due deliveries at least this often (retries coming due, replays, re-driven ones); a
   * step that published deliveries, or found a full page, looks at once. Default 1000.
   */
  dispatchEveryMs?: number;
  retentionDays: number;
  jobRetentionSeconds: number;
  logger: { info(obj: object, msg?: string): void; warn(obj: object, msg?: string): void };
}

const PURGE_EVERY_MS = 3_600_000;

/**
 * The outbox's pump, run by every worker process: (1) publish — number committed events in order
 * and create their deliveries (one publisher transaction at a time across the pool, an advisory
 * lock); (2) dispatch — hand due deliveries to the delivery queue, oldest due first, one job per
 * group of up to `groupSize`, only while the queue holds fewer than `highWater` deliveries (SKIP
 * LOCKED: processes share the work); (3) purge events older than EVENT_RETENTION_DAYS, hourly. A
 * 100,000-item batch thus costs the ledger one insert per chunk, and Redis at most `highWater`
 * deliveries (`highWater / groupSize` jobs) whatever the backlog.
 */
export class OutboxPump {
  private stopped = false;
  private loop: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  private lastPurge = 0;
  private lastDispatch = 0;
  private dispatchNow = true;

  constructor(private readonly opts: PumpOptions) {}

  start(): void {
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.wake?.();
    await this.loop;
  }

  /** One step; true when there may be more to do at once. */
  async step(): Promise<boolean> {
    const { sql, queue, pageSize } = this.opts;
    const published = await publishEvents(sql, pageSize);
    if (published.published) eventsPublished.inc(published.published);
    const { groupSize } = this.opts;
    // Idle, a step is one probe of PostgreSQL (publishEvents); the queue's depth and the due
    // deliveries are looked at when there is reason to (new deliveries, a full page last time) or
    // once every dispatchEveryMs — every worker runs a pump, ten steps a second each.
    const dispatch =
      this.dispatchNow || published.deliveries > 0 || Date.now() - this.lastDispatch >= (this.opts.dispatchEveryMs ?? 1000);
    let room = 0;
    let claimed = 0;
    if (dispatch) {
      this.lastDispatch = Date.now();
      room = Math.min(pageSize, this.opts.highWater - (await queue.depth()) * groupSize);
    }
    if (room > 0) {
      const groups = await claimDueDeliveries(sql, room, groupSize);
      for (const g of groups) claimed += g.deliveries.length;
      // If the add fails, the deliveries stay handed over to their jobs: the add may have reached
      // Redis all the same (a timeout), and making them due again here could put them in a second
      // job beside the first. The reconciler adds the jobs Redis does not have, under the same ids.
      await queue.add(groups, this.opts.jobRetentionSeconds);
    }
    if (Date.now() - this.lastPurge > PURGE_EVERY_MS) {
      this.lastPurge = Date.now();
      const before = new Date(Date.now() - this.opts.retentionDays * 86_400_000);
      const purged = { events: 0, deliveries: 0 };
      for (let full = true; full && !this.stopped; ) {
        const step = await purgeEvents(sql, before, pageSize);
        purged.events += step.events;
        purged.deliveries += step.deliveries;
        full = step.events === pageSize || step.deliveries === pageSize;
      }
      if (purged.events || purged.deliveries) {
        this.opts.logger.info({ purged: purged.events, deliveries: purged.deliveries, before }, 'events past retention deleted');
      }
    }
    // A backlog (the queue at its high water, or a full page claimed): look again next step.
    if (dispatch) this.dispatchNow = room <= 0 || claimed === room;
    return published.published === pageSize || (room > 0 && claimed === room);
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      let busy = false;
      try {
        busy = await this.step();
      } catch (err) {
        this.opts.logger.warn({ err }, 'outbox pump step failed; retrying');
      }
      if (!busy && !this.stopped) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, this.opts.idleMs);
          this.wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
    }
  }
}
