import { type Scenario, sleep } from '../scenario.ts';

/**
 * How long no node is the primary: the failover manager's detection time, shortened (Patroni's
 * default TTL is 30 s, pg_auto_failover's about 20 s). Every process keeps retrying meanwhile.
 */
const NO_PRIMARY_MS = 2_000;

/**
 * The primary's machine is lost: its postmaster and every backend SIGKILLed at once; then the
 * synchronous standby is promoted (`pg_ctl promote`, standing in for Patroni or pg_auto_failover).
 * The API and both workers hold a multi-host DATABASE_URL (`target_session_attrs=read-write`) that
 * also lists an asynchronous standby, which stays a standby (its failover manager would re-point it
 * later): they must find the new primary by themselves and never use that standby. The invariants are then read from the new primary alone,
 * so a 200 whose payout was only on the lost primary shows as lost.
 */
export const primaryFailover: Scenario = {
  name: 'primary-failover',
  fault: `PostgreSQL primary SIGKILLed, synchronous standby promoted ${NO_PRIMARY_MS / 1000} s later (a 2nd standby listed)`,
  workers: 2,
  redis: 'aof',
  postgres: 'pair',
  credit: true,
  inject: async (c, started) => {
    await c.pair.killPrimary();
    started();
    c.marks.set('killed', Date.now());
    await sleep(NO_PRIMARY_MS);
    await c.pair.promoteStandby();
    c.marks.set('promoted', Date.now());
    await c.useCheckerUrl(c.pair.nodeUrl('standby', 'quest_chaos'));
  },
};
