import type { Scenario } from '../scenario.ts';

export const redisKillAof: Scenario = {
  name: 'redis-kill-aof',
  fault: 'Redis `kill -9`, restart with AOF (everysec)',
  workers: 2,
  redis: 'aof',
  credit: false,
  inject: async (c) => {
    await c.redis.kill9();
    await c.redis.start();
  },
};
