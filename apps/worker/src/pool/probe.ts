import type { ProbeSample } from '@quest/domain';
import { delay } from './consumer.ts';

/** Probes left hanging past their deadline before the next ones are counted failed unsent. */
const MAX_OUTSTANDING_PROBES = 3;

/**
 * The worker's own path to its database, sampled with a deadline: `probe` resolves once a trivial
 * query answered. A probe past its deadline is left behind (it settles when the network does) and
 * the next one starts on time, so a wedged path keeps counting as failures; with
 * MAX_OUTSTANDING_PROBES still hanging, the next samples fail unsent rather than queue behind them.
 */
export class DatabaseProbe {
  private outstanding = 0;

  constructor(
    private readonly probe: () => Promise<void>,
    private readonly timeoutMs: number,
    private readonly logger: { warn(obj: object, msg?: string): void },
  ) {}

  async sample(): Promise<ProbeSample> {
    const { timeoutMs } = this;
    if (this.outstanding >= MAX_OUTSTANDING_PROBES) return { ok: false, latencyMs: timeoutMs };
    const started = performance.now();
    try {
      this.outstanding++;
      const answered = this.probe().finally(() => this.outstanding--);
      const outcome = await Promise.race([answered.then(() => 'answered' as const), delay(timeoutMs)]);
      if (outcome !== 'answered') this.logger.warn({ timeoutMs }, 'database probe missed its deadline');
      return { ok: outcome === 'answered', latencyMs: performance.now() - started };
    } catch (err) {
      this.logger.warn({ err }, 'database probe failed');
      return { ok: false, latencyMs: performance.now() - started };
    }
  }
}
