import { type Scenario, withBacklog } from '../scenario.ts';

export const redisFlushall: Scenario = {
  name: 'redis-flushall',
  fault: 'Redis `FLUSHALL` with a backlog queued (data loss, no restart)',
  workers: 2,
  redis: 'none',
  credit: true,
  inject: (c) => withBacklog(c, () => c.redis.flushAll()),
};
