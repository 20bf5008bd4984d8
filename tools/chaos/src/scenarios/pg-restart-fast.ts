import type { Scenario } from '../scenario.ts';

export const pgRestartFast: Scenario = {
  name: 'pg-restart-fast',
  fault: 'PostgreSQL `pg_ctl restart -m fast`',
  workers: 2,
  redis: 'aof',
  credit: true,
  inject: (c) => c.pg.restartFast(),
};
