import { createSql, type Sql } from '@quest/db';
import { migrate } from '@quest/db/migrate';
import { deleteKeysWithPrefix } from '@quest/queue';
import { createNumberedAccounts } from '@quest/testing/seed';
import { dropDatabase, withDatabase } from '@quest/testing/servers';
import type { BaseCtx, Peer } from './context.ts';
import { addBenchDatabase } from './probes/cpu.ts';
import { type BenchOwner, seedOwner } from './seed.ts';
import { type Service, startPeerProcesses } from './services.ts';

export async function startPeer(base: BaseCtx, accountCount: number): Promise<Peer> {
  const { infra } = base;
  const dbName = `${infra.dbName}_peer`;
  const prefix = `${infra.prefix}p`;
  const databaseUrl = withDatabase(infra.serverUrl, dbName);
  let sql: Sql | undefined;
  infra.alsoCleanUp(async () => {
    await sql?.end({ timeout: 2 }).catch(() => {});
    await dropDatabase(withDatabase(infra.serverUrl, 'postgres'), dbName);
    await deleteKeysWithPrefix(infra.redis, prefix);
  });
  await migrate(databaseUrl);
  addBenchDatabase(dbName);
  sql = createSql(databaseUrl, { max: 4, applicationName: 'quest-bench' });
  const owner = await seedOwner(sql);
  await createNumberedAccounts(sql, accountCount);
  await sql`analyze`;
  const { api, worker } = await startPeerProcesses({ DATABASE_URL: databaseUrl, REDIS_URL: infra.redisUrl, PEER_PREFIX: prefix });
  base.log(`obvious-queue peer at ${api.baseUrl} (database ${dbName}, Redis prefix ${prefix}; worker pid ${worker.pid})`);
  return { api, worker, sql, owner, dbName };
}
