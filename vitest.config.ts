import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { defineConfig } from 'vitest/config';

/**
 * The files that take longest, longest first (measured two at a time like the suite, on the
 * 2-core machine, 2026-12-02: about 76 s down to 16 s). Vitest runs the files it has
 * durations for longest first, but a clean checkout (CI) has none, and then it runs the largest
 * files first: the fault suite's fast subset (a 25-line file, ~40 s) came last of the integration
 * files, and the suite ended with one worker busy on it while the other had nothing left to do.
 * Started first, the long files overlap the many short ones instead. A file missing here only
 * loses its place in the queue.
 */
const SLOWEST_FIRST = [
  'tests/docs/commands.test.ts',
  'tests/system/client.test.ts',
  'tests/system/credit.test.ts',
  'tests/system/console.test.ts',
  'tools/chaos/test/chaos.test.ts',
  'tests/system/restore.test.ts',
  'tests/system/webhooks.test.ts',
  'tests/system/cluster.test.ts',
  'tests/system/batches.test.ts',
  'tests/system/replies.test.ts',
  'apps/api/test/fuzz.test.ts',
  'tests/system/gray.test.ts',
  'apps/worker/test/healthcheck.test.ts',
  'tests/system/crash.test.ts',
  'tests/system/faults.test.ts',
  'tests/system/reverse-cli.test.ts',
  'tests/system/order-spread.test.ts',
  'tests/system/status.test.ts',
  'tests/system/failover.test.ts',
  'tests/system/console-views.test.ts',
];

class SlowestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (f: TestSpecification) => {
      const i = SLOWEST_FIRST.findIndex((path) => f.moduleId.endsWith(`/${path}`));
      return i === -1 ? SLOWEST_FIRST.length : i;
    };
    // Stable: the rest keep vitest's own order (cached durations, else size).
    return (await super.sort(files))
      .map((file, i) => ({ file, i, rank: rank(file) }))
      .sort((a, b) => a.rank - b.rank || a.i - b.i)
      .map(({ file }) => file);
  }
}

// A developer's .env must not change what tests configure: every process a test starts inherits
// ENV_FILE=/dev/null (see packages/config/src/env-file.ts), unless the test names a file itself.
const NO_ENV_FILE = { ENV_FILE: '/dev/null' };

/**
 * What every file that starts servers or processes shares: the environment above, the bundles
 * built once (so the processes tests start run as in production, without tsx's start-up cost:
 * see serviceEntry in @quest/testing), and a minute per test and hook.
 */
const WITH_PROCESSES = {
  env: NO_ENV_FILE,
  globalSetup: ['tests/global-setup.ts'],
  testTimeout: 60_000,
  hookTimeout: 60_000,
};

export default defineConfig({
  test: {
    // Two files at a time: most of a system test's time is spent waiting on the processes it starts,
    // so on a 2-core machine this halves the suite's wall time (327 s → 217 s measured). Three
    // gained nothing on 2026-12-02 (500 s against 515 s) and loaded the cores more.
    maxWorkers: 2,
    sequence: { sequencer: SlowestFirst },
    // The JSON report is what .ci/run counts passed/failed tests from.
    reporters: ['default', ['json', { outputFile: 'test-results/vitest.json' }]],
    projects: [
      {
        test: {
          name: 'unit',
          env: NO_ENV_FILE,
          // Unit files share a worker's module cache instead of importing everything again per file:
          // the project's 46 files take ~6 s instead of ~12.5 s here. They mock nothing global and
          // keep no state between files (checked: shuffled file orders, one and two workers).
          isolate: false,
          include: ['packages/*/src/**/*.test.ts', 'apps/*/src/**/*.test.ts', 'tools/*/src/**/*.test.ts'],
        },
      },
      {
        test: {
          name: 'integration',
          ...WITH_PROCESSES,
          // The apps' and packages' own integration files (an app on `inject`, a database, a Redis
          // prefix of their own, a process now and then) share a worker's module cache like the
          // unit files: each isolated file paid 1–2 s importing fastify, zod, BullMQ and the apps
          // again (apps/api/test alone: 72 s of imports, 108 s → 60 s of wall time; the whole
          // `npm test` 440 s → 324 s). They mock no module, stub no global and change no
          // process.env (checked by grep, and by runs with --sequence.shuffle.files); the system,
          // docs and fault files below stay isolated.
          isolate: false,
          include: ['packages/*/test/**/*.test.ts', 'apps/*/test/**/*.test.ts'],
        },
      },
      {
        test: {
          name: 'system',
          ...WITH_PROCESSES,
          include: ['tools/*/test/**/*.test.ts', 'tests/**/*.test.ts'],
        },
      },
    ],
  },
});
