import { classifyDbError, type Sql } from '@quest/db';
import { Gauge } from 'prom-client';
import { registry } from './metrics.ts';

export interface ReadRoutingLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

/** A WAL position (`16/B374D848`) as a number that orders like pg_lsn. */
export function lsnValue(lsn: string): bigint {
  const [hi, lo] = lsn.split('/');
  return (BigInt(`0x${hi}`) << 32n) + BigInt(`0x${lo}`);
}

export const readReplicaStaleness = new Gauge({
  name: 'quest_read_replica_staleness_seconds',
  help:
    'Public reads (GET /quests, GET /campaigns/{id}) may miss commits newer than this: seconds since the primary ' +
    'last had nothing the read replica lacks (-1: unknown). Above DATABASE_READ_MAX_LAG_MS they go to the primary.',
  registers: [registry],
});

/**
 * Where the public reads go when DATABASE_READ_URL names standbys: to the read pool while it is
 * known to hold every commit the primary had `maxLagMs` ago, else to the primary. Known how: every
 * `intervalMs` the router samples the primary's WAL position (with the time it asked) and the
 * replica's replay position; the replica is as fresh as the newest sample it has replayed past. So
 * the bound holds whatever the cause (a slow or paused replay, a broken stream, an idle primary
 * never makes a replica look stale), and once nothing is known for `maxLagMs` (the primary or the
 * replica unreachable) the reads go to the primary.
 */
export class ReadRouter {
  #samples: { at: number; lsn: bigint }[] = [];
  #freshAsOf: number | undefined;
  #onReplica = false;
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;

  constructor(
    private readonly primary: Sql,
    private readonly replica: Sql,
    private readonly opts: { maxLagMs: number; intervalMs: number; logger: ReadRoutingLogger; now?: () => number },
  ) {}

  /** Sample at once, then every `intervalMs`. */
  async start(): Promise<void> {
    await this.tick();
    this.#schedule();
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
  }

  /** Milliseconds of commits the replica may lack; undefined when unknown. */
  get stalenessMs(): number | undefined {
    return this.#freshAsOf === undefined ? undefined : Math.max(0, this.#now() - this.#freshAsOf);
  }

  /** The pool a public read uses now. */
  pool(): Sql {
    const staleness = this.stalenessMs;
    const onReplica = staleness !== undefined && staleness <= this.opts.maxLagMs;
    if (onReplica !== this.#onReplica) {
      this.#onReplica = onReplica;
      if (onReplica) this.opts.logger.info({ stalenessMs: staleness }, 'public reads on the read replica');
      else
        this.opts.logger.warn(
          { stalenessMs: staleness ?? null, maxLagMs: this.opts.maxLagMs },
          'public reads on the primary: the read replica is too far behind or unreachable',
        );
    }
    return onReplica ? this.replica : this.primary;
  }

  /** Run a public read where pool() says; a replica that fails with a transient error is replaced by the primary. */
  async read<T>(fn: (sql: Sql) => Promise<T>): Promise<T> {
    const sql = this.pool();
    if (sql === this.primary) return fn(sql);
    try {
      return await fn(sql);
    } catch (err) {
      if (classifyDbError(err) !== 'transient') throw err;
      return fn(this.primary);
    }
  }

  async tick(): Promise<void> {
    const at = this.#now();
    try {
      const [row] = await this.primary<{ lsn: string; standby: boolean }[]>`
        select pg_current_wal_lsn()::text as lsn`;
      this.#samples.push({ at, lsn: lsnValue(row!.lsn) });
    } catch {}
    try {
      const [row] = await this.replica<{ lsn: string | null; standby: boolean }[]>`
        select pg_last_wal_replay_lsn()::text as lsn, pg_is_in_recovery() as standby`;
      // A promoted replica is a primary: it lacks nothing.
      if (!row!.standby) this.#freshAsOf = this.#now();
      else if (row!.lsn !== null) {
        const replayed = lsnValue(row!.lsn);
        const caughtUp = this.#samples.filter((s) => s.lsn <= replayed);
        const newest = caughtUp.at(-1);
        if (newest && (this.#freshAsOf === undefined || newest.at > this.#freshAsOf)) this.#freshAsOf = newest.at;
      }
    } catch {}
    // Samples older than the newest one replayed can no longer matter (keep a bounded history).
    const fresh = this.#freshAsOf ?? 0;
    this.#samples = this.#samples.filter((s) => s.at >= fresh).slice(-1000);
    const staleness = this.stalenessMs;
    readReplicaStaleness.set(staleness === undefined ? -1 : staleness / 1000);
    this.pool();
  }

  #now(): number {
    return (this.opts.now ?? Date.now)();
  }

  #schedule(): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => void this.tick().finally(() => this.#schedule()), this.opts.intervalMs);
    this.#timer.unref();
  }
}

/** How often a ReadRouter samples the WAL positions: a constant, the bound is DATABASE_READ_MAX_LAG_MS. */
export const READ_ROUTING_INTERVAL_MS = 500;

/** A public read (GET /quests, GET /campaigns/{id}): on the read replica when routed there, else the primary. */
export function publicRead<T>(deps: { sql: Sql; reads?: ReadRouter | undefined }, fn: (sql: Sql) => Promise<T>): Promise<T> {
  return deps.reads ? deps.reads.read(fn) : fn(deps.sql);
}
