import type { PartitionQueues } from '@quest/queue';
import { type ConsumerSettings, PartitionConsumer } from './consumer.ts';

export interface PartitionConsumersOptions extends ConsumerSettings {
  /** How long a partition may sit idle before its backlog is read. */
  idleCheckMs: number;
  stallRestartMs: number;
}

/**
 * The consumers of the partitions this process owns, one per partition, and the one place that
 * starts and stops them: a hand-over among healthy members lets the active job finish; a worker
 * that cannot do the work abandons it. It also watches them: when each last started and decided a
 * job, and whether jobs wait, so a partition whose consumer stopped fetching gets a fresh one.
 */
export class PartitionConsumers {
  /** The consumer of each partition this process owns (`starting` until it exists). */
  private readonly consumers = new Map<number, PartitionConsumer | 'starting'>();
  /** Consumers being stopped, until they are: a partition starts again only after. */
  private readonly closing = new Map<number, { consumer: PartitionConsumer; done: Promise<void> }>();
  /** When each partition last started or finished a job (performance.now()). */
  private readonly lastActivity = new Map<number, number>();
  /** When each partition last finished a job, and whether jobs wait behind it (for the stall gauge). */
  private readonly progress = new Map<number, { decidedAt: number; waiting: boolean }>();
  private stopped = false;
  /** Consumers restarted because their partition stalled. */
  restarts = 0;

  constructor(private readonly opts: PartitionConsumersOptions) {}

  /** Partitions with a consumer (starting, running). */
  partitions(): number[] {
    return [...this.consumers.keys()];
  }

  /**
   * Consume exactly the `target` partitions, stopping the others as `how` says; abandoning with no
   * target also abandons the hand-overs still finishing (leaving the pool, fenced: that job may be
   * the one stuck on the broken path). Whether any consumer was started or stopped.
   */
  deal(target: readonly number[], how: 'finish' | 'abandon'): boolean {
    if (how === 'abandon' && target.length === 0) {
      const had = this.consumers.size > 0;
      for (const p of this.partitions()) this.stop(p, 'abandon');
      for (const { consumer } of this.closing.values()) consumer.escalate();
      return had;
    }
    const want = new Set(target);
    const gone = this.partitions().filter((p) => !want.has(p));
    const add = target.filter((p) => !this.consumers.has(p));
    for (const p of gone) this.stop(p, how);
    for (const p of add) void this.start(p);
    return gone.length > 0 || add.length > 0;
  }

  /** Seconds each partition with waiting jobs has gone without deciding one (0: none waiting). */
  stalledSeconds(): Map<number, number> {
    const now = performance.now();
    const out = new Map<number, number>();
    for (const p of this.consumers.keys()) {
      const s = this.progress.get(p);
      out.set(p, s?.waiting ? Math.max(0, (now - s.decidedAt) / 1000) : 0);
    }
    return out;
  }

  private async start(p: number): Promise<void> {
    const pendingClose = this.closing.get(p);
    this.consumers.set(p, 'starting'); // so a second heartbeat does not start it twice
    if (pendingClose) await pendingClose.done;
    if (this.stopped || this.consumers.get(p) !== 'starting') return;
    const now = performance.now();
    this.lastActivity.set(p, now);
    this.progress.set(p, { decidedAt: now, waiting: false });
    const consumer = new PartitionConsumer(p, this.opts, (decided) => {
      const at = performance.now();
      this.lastActivity.set(p, at);
      if (decided) this.progress.set(p, { decidedAt: at, waiting: this.progress.get(p)?.waiting ?? false });
    });
    this.consumers.set(p, consumer);
  }

  /**
   * Stop consuming partition p. `finish` lets the active job finish first (a hand-over among
   * healthy members: the next owner cannot start a job of this partition before that anyway,
   * global concurrency 1); a later `deal` with no target can still turn it into an abandonment. `abandon`: see
   * PartitionConsumer.abandon.
   */
  private stop(p: number, how: 'finish' | 'abandon'): void {
    const consumer = this.consumers.get(p);
    this.consumers.delete(p);
    this.lastActivity.delete(p);
    this.progress.delete(p);
    if (!consumer || consumer === 'starting') return;
    const done = (how === 'finish' ? consumer.finish() : consumer.abandon()).finally(() => consumer.dispose());
    this.closing.set(p, { consumer, done });
    void done.finally(() => {
      if (this.closing.get(p)?.done === done) this.closing.delete(p);
    });
  }

  /**
   * Partitions idle for a while: read their backlog. One with waiting jobs and none active whose
   * consumer has started nothing for `stallRestartMs` gets a fresh consumer.
   */
  async watchStalls(queues: PartitionQueues): Promise<void> {
    const now = performance.now();
    const owned = this.partitions();
    const idle = owned.filter((p) => now - (this.lastActivity.get(p) ?? now) > this.opts.idleCheckMs);
    for (const p of owned) if (!idle.includes(p)) this.setWaiting(p, true);
    await Promise.all(idle.map((p) => this.checkStall(queues, p, now)));
  }

  private async checkStall(queues: PartitionQueues, p: number, now: number): Promise<void> {
    const { waiting, active } = await queues.backlog(p);
    this.setWaiting(p, waiting + active > 0);
    const quiet = performance.now() - (this.lastActivity.get(p) ?? now);
    const consumer = this.consumers.get(p);
    if (waiting === 0 || active > 0 || quiet <= this.opts.stallRestartMs || !consumer || consumer === 'starting') return;
    this.restarts++;
    this.opts.logger.warn(
      { partition: p, waiting, quietMs: Math.round(quiet) },
      'partition stalled: jobs wait and its consumer fetches none; starting a fresh consumer',
    );
    this.stop(p, 'abandon');
    void this.start(p);
  }

  private setWaiting(p: number, waiting: boolean) {
    const s = this.progress.get(p);
    if (s) s.waiting = waiting;
  }

  /** Graceful stop: every active job finishes. */
  async close(): Promise<void> {
    this.stopped = true;
    for (const p of this.partitions()) this.stop(p, 'finish');
    await Promise.all([...this.closing.values()].map((c) => c.done));
  }
}
