import { type Scenario, withBacklog } from '../scenario.ts';

export const redisKillNopersist: Scenario = {
  name: 'redis-kill-nopersist',
  fault: 'Redis `kill -9` with a backlog queued, restart without persistence (data loss)',
  workers: 2,
  redis: 'none',
  credit: true,
  inject: (c) =>
    withBacklog(c, async () => {
      await c.redis.kill9();
      await c.redis.start();
    }),
};
