import { workerId } from '@quest/testing/workers';
import { kill9, type Scenario, waitUntil } from '../scenario.ts';
import { deliveryJobs, webhookEnv } from '../webhooks.ts';

export const webhooksWorkerSigkill: Scenario = {
  name: 'webhooks-worker-sigkill',
  fault: 'a worker `SIGKILL`ed with webhook deliveries in hand (a receiver answering after 300 ms)',
  workers: 2,
  redis: 'aof',
  credit: false,
  env: webhookEnv(),
  // Slow answers keep deliveries in hand, so the kill lands mid-delivery.
  webhooks: { delayMs: 300 },
  inject: async (c) => {
    const victim = c.live('worker')[0]!;
    const id = workerId(victim.proc);
    // The victim holds a delivery job (BullMQ's processedBy) and the receiver has a request open.
    await waitUntil(async () => (await deliveryJobs(c)).active.includes(id) && c.webhooks!.receiver.inFlight > 0, 20_000);
    await kill9(victim);
  },
};
