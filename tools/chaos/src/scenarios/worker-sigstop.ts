import { type Scenario, sleep } from '../scenario.ts';

/** Longer than WORKER_LOCK_MS (4 s): the frozen worker's job lock expires and its job is taken over. */
const FREEZE_MS = 9_000;

export const workerSigstop: Scenario = {
  name: 'worker-sigstop',
  fault: `a worker \`SIGSTOP\` ${FREEZE_MS / 1000} s (> job lock), then \`SIGCONT\``,
  workers: 2,
  redis: 'aof',
  credit: false,
  inject: async (c, started) => {
    const w = (await c.workerInMidJob(3_000)) ?? c.live('worker')[0]!;
    w.proc.child.kill('SIGSTOP');
    started();
    try {
      await sleep(FREEZE_MS);
    } finally {
      w.proc.child.kill('SIGCONT');
    }
  },
};
