import { type Scenario, sleep } from '../scenario.ts';

/** How long PostgreSQL stays down after an immediate stop. */
const PG_DOWN_MS = 3_000;

export const pgStopImmediate: Scenario = {
  name: 'pg-stop-immediate',
  fault: `PostgreSQL \`pg_ctl stop -m immediate\`, ${PG_DOWN_MS / 1000} s down, start`,
  workers: 2,
  redis: 'aof',
  credit: true,
  inject: async (c) => {
    await c.pg.stopImmediate();
    await sleep(PG_DOWN_MS);
    await c.pg.start();
  },
};
