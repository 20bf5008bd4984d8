/**
 * Container healthcheck of a worker: exit 0 while its pool membership is fresh, 1 otherwise, with
 * one line saying why. Reads the liveness file the worker writes (see health.ts):
 *
 *   node apps/worker/dist/healthcheck.mjs [FILE] [--max-age-ms N]
 *
 * FILE defaults to WORKER_HEALTH_FILE, read from the environment and `.env` as the worker reads
 * it. No Redis or PostgreSQL connection: a healthcheck must be cheap, and the worker's own
 * heartbeat already proves it reaches Redis.
 */
import { ConfigError, loadEnvironment } from '@quest/config';
import { loadHealthcheckConfig } from './env.ts';
import { checkHealthFile } from './health.ts';

function usage(message: string): never {
  console.error(`quest-worker-healthcheck: ${message}\nusage: healthcheck.mjs [FILE] [--max-age-ms N]`);
  process.exit(2);
}

// The worker's own environment and `.env`, so the check finds the file the worker writes.
let file: string | undefined;
try {
  file = loadHealthcheckConfig(loadEnvironment(process.env).env).WORKER_HEALTH_FILE;
} catch (error) {
  usage(error instanceof ConfigError ? error.message : String(error));
}
const args = process.argv.slice(2);
let maxAgeMs: number | undefined;
for (let i = 0; i < args.length; i++) {
  const arg = args[i]!;
  if (arg === '--max-age-ms') {
    const value = args[++i];
    if (!value || !/^\d+$/.test(value)) usage('--max-age-ms takes a whole number of milliseconds');
    maxAgeMs = Number(value);
  } else if (arg.startsWith('-')) {
    usage(`unknown option ${arg}`);
  } else {
    file = arg;
  }
}
if (!file) usage('no liveness file: pass its path or set WORKER_HEALTH_FILE');

const verdict = checkHealthFile(file, Date.now(), maxAgeMs);
if (verdict.healthy) {
  console.log(
    `healthy: ${verdict.record.memberId} renewed its pool membership ${verdict.ageMs} ms ago (${verdict.record.members} members, partitions ${verdict.record.partitions.join(',') || 'none'})`,
  );
  process.exit(0);
}
console.error(`unhealthy: ${verdict.reason}`);
process.exit(1);
