import { createSql } from '@quest/db';
import { buildApp } from '../src/app.ts';
import { loadApiConfig } from '../src/env.ts';

const config = loadApiConfig({ DATABASE_URL: 'postgres://postgres@127.0.0.1:1/x', LOG_LEVEL: 'silent', METRICS_SAMPLE_MS: '0' });
const sql = createSql(config.DATABASE_URL, { max: 1 });
const flags = { require() {}, isEnabled: () => true, current: { quests: true, campaigns: true }, stop() {} } as never;
const app = await buildApp(config, {
  sql,
  flags,
  allocator: {
    allocate: async () => {
      throw new Error();
    },
    runBatch: async () => {
      throw new Error();
    },
    ping: async () => {},
    liveWorkers: async () => 0,
    close: async () => {},
  } as never,
});
await app.ready();
const res = await app.inject({ method: 'GET', url: '/openapi.json' });
process.stdout.write(res.body);
await app.close();
await sql.end({ timeout: 1 });
