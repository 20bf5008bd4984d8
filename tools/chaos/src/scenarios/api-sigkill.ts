import { kill9, type Scenario } from '../scenario.ts';

export const apiSigkill: Scenario = {
  name: 'api-sigkill',
  fault: 'the API `SIGKILL`, restarted on its port',
  workers: 2,
  redis: 'aof',
  credit: false,
  inject: async (c) => {
    await kill9(c.live('api')[0]!);
    await c.startApi();
  },
};
