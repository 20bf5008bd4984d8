import { type Scenario, withBacklog } from '../scenario.ts';

export const redisFlushall: Scenario = {
  name: 'redis-flushall',
  fault: 'Redis `FLUSHALL` with a backlog queued (data loss, no restart), reversals mixed in (1 op in 6)',
  workers: 2,
  redis: 'none',
  credit: true,
  reverseEvery: 6,
  inject: (c) => withBacklog(c, () => c.redis.flushAll()),
};
