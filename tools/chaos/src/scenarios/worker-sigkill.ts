import { kill9, type Scenario } from '../scenario.ts';

export const workerSigkill: Scenario = {
  name: 'worker-sigkill',
  fault: 'a worker `SIGKILL`',
  workers: 2,
  redis: 'aof',
  credit: false,
  inject: (c) => kill9(c.live('worker')[0]!),
};
