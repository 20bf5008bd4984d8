import { sleep, type Scenario } from '../scenario.ts';
import { webhookEnv } from '../webhooks.ts';

export const webhooksReceiverDown: Scenario = {
  name: 'webhooks-receiver-down',
  fault: 'the webhook receiver down (connections refused) for 60 s (`--small`: 10 s), load going on',
  workers: 2,
  redis: 'aof',
  credit: true,
  env: webhookEnv(),
  webhooks: {},
  inject: async (c, started, profile) => {
    await c.webhooks!.receiver.down();
    started();
    await sleep(profile.outageMs);
    await c.webhooks!.receiver.up();
  },
};
