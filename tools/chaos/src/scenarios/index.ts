import type { Scenario } from '../scenario.ts';
import { apiSigkill } from './api-sigkill.ts';
import { GRAY_SCENARIOS } from './gray.ts';
import { pgRestartFast } from './pg-restart-fast.ts';
import { pgStopImmediate } from './pg-stop-immediate.ts';
import { primaryFailover } from './primary-failover.ts';
import { redisFlushall } from './redis-flushall.ts';
import { redisKillAof } from './redis-kill-aof.ts';
import { redisKillNopersist } from './redis-kill-nopersist.ts';
import { restoreDrill } from './restore-drill.ts';
import { webhooksReceiverDown } from './webhooks-receiver-down.ts';
import { webhooksRedisFlushall } from './webhooks-redis-flushall.ts';
import { webhooksWorkerSigkill } from './webhooks-worker-sigkill.ts';
import { workerSigkill } from './worker-sigkill.ts';
import { workerSigkillReversals } from './worker-sigkill-reversals.ts';
import { workerSigstop } from './worker-sigstop.ts';
import { workerZombie } from './worker-zombie.ts';

/** Every fault of the suite, in the order `npm run chaos` runs them. */
export const SCENARIOS: Scenario[] = [
  pgRestartFast,
  pgStopImmediate,
  primaryFailover,
  redisKillAof,
  redisKillNopersist,
  redisFlushall,
  workerSigkill,
  workerSigkillReversals,
  workerSigstop,
  workerZombie,
  apiSigkill,
  webhooksReceiverDown,
  webhooksWorkerSigkill,
  webhooksRedisFlushall,
  ...GRAY_SCENARIOS,
  restoreDrill,
];
