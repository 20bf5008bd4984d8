import { type Scenario, waitUntil, withBacklog } from '../scenario.ts';
import { deliveryJobs, webhookEnv } from '../webhooks.ts';

export const webhooksRedisFlushall: Scenario = {
  name: 'webhooks-redis-flushall',
  fault: 'Redis `FLUSHALL` with webhook deliveries and allocations queued in it',
  workers: 2,
  redis: 'none',
  credit: true,
  env: webhookEnv(),
  webhooks: { delayMs: 100 },
  inject: async (c) => {
    // Wait until delivery jobs are in Redis, then freeze the workers so more queue up, and flush.
    await waitUntil(async () => {
      const jobs = await deliveryJobs(c);
      return jobs.waiting + jobs.active.length > 0;
    }, 20_000);
    await withBacklog(c, async () => {
      const jobs = await deliveryJobs(c);
      console.error(
        `[webhooks-redis-flushall] flushing with ${jobs.waiting} delivery jobs waiting, ${jobs.active.length} in hand`,
      );
      await c.redis.flushAll();
    });
  },
};
