import { createSql, type Sql } from '@quest/db';
import { migrate } from '@quest/db/migrate';
import { deleteKeysWithPrefix } from '@quest/queue';
import { createNumberedAccounts } from '@quest/testing/seed';
import { dropDatabase, withDatabase } from '@quest/testing/servers';
import type { BaseCtx } from './context.ts';
import { addBenchDatabase } from './probes/cpu.ts';
import { type BenchOwner, seedOwner } from './seed.ts';
import { type Service, startPeerProcesses } from './services.ts';

/**
 * The obvious-queue peer as the bench runs it (peer-api.ts, peer-worker.ts): on a database of its
 * own (`<bench database>_peer`, migrated like the bench's, with its own owner and the same
 * numbered accounts) and a Redis key prefix of its own (`<bench prefix>p`), both dropped with the
 * bench's. Its own database keeps the service's background work (outbox, reconciler) away from its
 * rows, and its rows away from the service's checks; the bench checks its ledger separately.
 */
export interface Peer {
  api: Service & { baseUrl: string };
  worker: Service;
  /** A small pool on the peer's database, for seeding its quests and checking its ledger. */
  sql: Sql;
  owner: BenchOwner;
  dbName: string;
}

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
