import { describe, expect, test } from 'vitest';
import { pgBackRestUnavailable } from '@quest/testing/pgbackrest';
import { runRestoreDrill } from '@quest/testing/restore-drill';

/**
 * The short version of `npm run chaos -- --only restore-drill` (packages/testing/src/restore-drill.ts):
 * keyed load on a PostgreSQL archived by pgBackRest, a base backup during it, a mistaken DELETE of
 * a quest's payouts; restored to a moment before the DELETE and then, after the data directory is
 * destroyed, to the latest point, with `quest-admin restore prepare` and the service started on
 * each. Skipped only where pgBackRest is not installed (.ci/run installs it).
 */

const unavailable = pgBackRestUnavailable();

describe.skipIf(unavailable !== undefined)(`restore from pgBackRest${unavailable ? ` (skipped: ${unavailable})` : ''}`, () => {
  test('point in time before a mistaken DELETE, then the latest point after the disk is lost', { timeout: 600_000 }, async () => {
    const lines: string[] = [];
    const report = await runRestoreDrill({
      clients: 2,
      perPhase: 5,
      serviceAfterLatest: false,
      workers: 1,
      log: (m) => {
        lines.push(m);
        console.error(`${new Date().toISOString()} ${m}`);
      },
    });
    expect(report.violations, lines.join('\n')).toEqual([]);
    // Credits were acknowledged on both sides of the recovery target, and the ones after it that the
    // restore rewound were all reported by `restore prepare`.
    expect(report.pitr.ackedBefore).toBeGreaterThan(0);
    expect(report.pitr.ackedAfter).toBeGreaterThan(0);
    expect(report.pitr.prepareRewound).toBeGreaterThanOrEqual(report.pitr.rewound);
    expect(report.latest.lost).toBe(0);
    expect(report.latest.acked).toBeGreaterThan(report.pitr.ackedBefore + report.pitr.ackedAfter);
  });
});
