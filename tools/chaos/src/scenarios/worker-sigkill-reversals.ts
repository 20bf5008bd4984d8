import { kill9, type Scenario } from '../scenario.ts';

/** worker-sigkill with reversals mixed into the load: one op in 6 reverses an earlier answered payout. */
export const workerSigkillReversals: Scenario = {
  name: 'worker-sigkill-reversals',
  fault: 'a worker `SIGKILL`, reversals mixed into the load (1 op in 6)',
  workers: 2,
  redis: 'aof',
  credit: false,
  reverseEvery: 6,
  inject: (c) => kill9(c.live('worker')[0]!),
};
