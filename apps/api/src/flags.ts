import { DomainError } from '@quest/domain';
import { type Feature, type FeatureFlags, getFeatureFlags, type Sql } from '@quest/db';

const DISABLED_CODE = { quests: 'QUESTS_DISABLED', campaigns: 'CAMPAIGNS_DISABLED' } as const satisfies Record<Feature, string>;

export interface FlagsLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

/**
 * How often each API process reloads the flags: an operator's switch must be seen within 2 s (the
 * documented bound), so this is a constant, not a setting; tests pass a shorter `refreshMs`.
 */
export const FLAGS_REFRESH_MS = 1000;

/**
 * In-memory copy of the feature_flags table, reloaded in the background every `refreshMs`, so
 * requests never query flags. A switch made by an operator is seen within refreshMs plus one
 * query. When a reload fails the last known values stay in force.
 */
export class FeatureFlagCache {
  #flags: FeatureFlags;
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;
  readonly #sql: Sql;
  readonly #refreshMs: number;
  readonly #logger: FlagsLogger;

  private constructor(sql: Sql, flags: FeatureFlags, refreshMs: number, logger: FlagsLogger) {
    this.#sql = sql;
    this.#flags = flags;
    this.#refreshMs = refreshMs;
    this.#logger = logger;
  }

  /** Load the flags (rejects when the database cannot be read) and start refreshing them. */
  static async start(sql: Sql, opts: { refreshMs?: number; logger: FlagsLogger }): Promise<FeatureFlagCache> {
    const cache = new FeatureFlagCache(sql, await getFeatureFlags(sql), opts.refreshMs ?? FLAGS_REFRESH_MS, opts.logger);
    cache.#schedule();
    return cache;
  }

  get current(): Readonly<FeatureFlags> {
    return this.#flags;
  }

  isEnabled(feature: Feature): boolean {
    return this.#flags[feature];
  }

  /** Throw QUESTS_DISABLED / CAMPAIGNS_DISABLED when the feature is switched off. */
  require(feature: Feature): void {
    if (!this.#flags[feature]) throw new DomainError(DISABLED_CODE[feature]);
  }

  /** Reload now. Never rejects: a failure is logged and the previous values are kept. */
  async refresh(): Promise<void> {
    try {
      const next = await getFeatureFlags(this.#sql);
      if (next.quests !== this.#flags.quests || next.campaigns !== this.#flags.campaigns) {
        this.#logger.info({ flags: next, previous: this.#flags }, 'feature flags changed');
      }
      this.#flags = next;
    } catch (err) {
      this.#logger.warn({ err, flags: this.#flags }, 'feature flag refresh failed; keeping the last known values');
    }
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
  }

  // A chain of timeouts rather than an interval: a slow query never overlaps the next one.
  #schedule(): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => {
      void this.refresh().finally(() => this.#schedule());
    }, this.#refreshMs);
    this.#timer.unref();
  }
}
