import { pgBackRestUnavailable } from '@quest/testing/pgbackrest';
import { runRestoreDrill } from '@quest/testing/restore-drill';
import type { Scenario } from '../scenario.ts';

/**
 * The restore drill (packages/testing/src/restore-drill.ts) at the suite's scale, on servers of its
 * own: PostgreSQL archived by pgBackRest, keyed load, a base backup during it, a mistaken DELETE of a
 * quest's payouts; restore to a moment before the DELETE and, after the data directory is
 * destroyed, to the latest point, `quest-admin restore prepare` and the service started each time.
 * The cluster the suite starts for every scenario carries the usual load meanwhile and is checked
 * as always; the drill's own violations fail the scenario, and its log line says what was rewound.
 */
export const restoreDrill: Scenario = {
  name: 'restore-drill',
  fault: 'mistaken DELETE of payouts, restore to before it; data dir destroyed, restore to latest (pgBackRest)',
  workers: 1,
  redis: 'aof',
  credit: false,
  inject: async (_c, started) => {
    const unavailable = pgBackRestUnavailable();
    if (unavailable) throw new Error(`restore drill cannot run: ${unavailable}`);
    started();
    const report = await runRestoreDrill({
      clients: 8,
      perPhase: 150,
      workers: 2,
      log: (m) => console.error(`[restore-drill] ${m}`),
    });
    const { pitr, latest } = report;
    console.error(
      `[restore-drill] point in time: ${pitr.ackedBefore} acknowledged before the target kept, ${pitr.rewound} of ${pitr.ackedAfter} after it rewound (${pitr.prepareRewound} reported by restore prepare), restore ${(pitr.restoreMs / 1000).toFixed(1)} s; latest: ${latest.lost} of ${latest.acked} lost, restore ${(latest.restoreMs / 1000).toFixed(1)} s`,
    );
    if (report.violations.length > 0)
      throw new Error(`${report.violations.length} violations: ${report.violations.slice(0, 10).join('; ')}`);
  },
};
