import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';

import { claimDueDeliveries, createSql, insertEndpoint, insertEvents, publishEvents, type Sql } from '@quest/db';
import { migrate } from '@quest/db/migrate';
import { DEFAULT_RETRY_SCHEDULE, encryptSecret, newId, newWebhookSecret } from '@quest/domain';
import type { DeliveryGroupJob } from '@quest/queue';
import { type PrivatePostgres, startPostgres } from '@quest/testing/postgres';
import { type DeliverDeps, deliverGroup, Limiter, SignerCache } from '@quest/worker/webhooks/deliver';
import { clusterCpuSeconds, cpuSeconds } from './probes/cpu.ts';
import { seedOwner } from './seed.ts';

/**
 * `npm run delivery-cost --workspace @quest/bench`: what a webhook delivery costs PostgreSQL and the
 * worker, the queue and the receiver aside, on a private server (initdb in a temp dir, a free port,
 * pg_stat_statements loaded; nobody else's queries), so every figure is this run's alone.
 *
 * Events are written as the ledger writes them (32 per insert), then published, claimed in groups
 * of 50 and delivered by the worker's own code (`deliverGroup`: read, sign, POST, record) to a
 * receiver in a child process that answers 204 — in rounds that alternate an owner without an
 * endpoint (the outbox's own cost) with an owner with one. Per event: PostgreSQL CPU (all its
 * processes), this process's CPU (the worker's share: publishing, claiming, delivering, and the
 * event inserts that stand in for the ledger), the receiver's CPU, WAL bytes. Then the statements
 * of the last round with an endpoint by execution time, and the rows PostgreSQL read by sequential
 * scans of the delivery log (none when every keyed statement finds its rows by index).
 * The server runs with fsync and full_page_writes off, as in pg-cost.
 */

const EVENTS = 10_000;
/** Events per insert: what the ledger writes per transaction under load (coalesced requests). */
const CHUNK = 32;
/** Inserts between pump steps. */
const CHUNKS_PER_STEP = 8;
const GROUP = 50;
const ROUNDS = 2;

const selfCpuSeconds = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};

/** A receiver in a child process (its CPU counted apart): every POST answered 204. */
async function startReceiver(): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(
    process.execPath,
    [
      '-e',
      `require('node:http').createServer((q, s) => { q.resume(); q.on('end', () => { s.statusCode = 204; s.end(); }); })
        .listen(0, '127.0.0.1', function () { console.log(this.address().port); });`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const port = await new Promise<number>((resolve, reject) => {
    child.once('error', reject);
    child.stdout!.once('data', (d) => resolve(Number(String(d).trim())));
  });
  return { child, url: `http://127.0.0.1:${port}/hooks` };
}

async function writeEvents(sql: Sql, ownerId: string, n: number) {
  const data = { payout: { id: newId('pay'), quest_id: 1, points: 10, address: `0x${'0'.repeat(39)}1` } };
  await insertEvents(
    sql,
    Array.from({ length: n }, () => ({
      id: newId('evt'),
      ownerId,
      type: 'payout.created' as const,
      questId: 1,
      allocationId: newId('alc'),
      batchId: null,
      data,
      createdAt: new Date(),
    })),
  );
}

interface Setup {
  sql: Sql;
  deps: DeliverDeps;
  postmaster: number;
  receiver: { child: ChildProcess; url: string };
}

/** pg_stat_statements loaded (a restart), the schema, an owner without an endpoint and one with the receiver's. */
async function prepareDatabase(pg: PrivatePostgres, receiverUrl: string) {
  const admin = createSql(pg.url('postgres'), { max: 1, applicationName: 'quest-delivery-cost' });
  await admin`alter system set shared_preload_libraries = 'pg_stat_statements'`;
  await admin.end();
  await pg.restartFast();
  const url = pg.url('qr_delivery_cost');
  await migrate(url);
  const sql = createSql(url, { max: 4, applicationName: 'quest-delivery-cost' });
  await sql`create extension pg_stat_statements`;
  const plain = await seedOwner(sql);
  const subscribed = await seedOwner(sql);
  const key = randomBytes(32);
  const endpointId = newId('whe');
  await insertEndpoint(sql, {
    id: endpointId,
    ownerId: subscribed.ownerId,
    url: receiverUrl,
    description: 'delivery-cost receiver',
    eventTypes: null,
    secretEnc: encryptSecret(newWebhookSecret(), key, endpointId),
  });
  const deps: DeliverDeps = {
    sql,
    secretKey: key,
    schedule: DEFAULT_RETRY_SCHEDULE,
    send: { allowPrivate: true, timeoutMs: 10_000, maxBodyBytes: 64 * 1024 },
    logger: { info() {}, warn() {} },
    concurrency: 16,
    limiter: new Limiter(64),
    signers: new SignerCache(),
  };
  return { sql, deps, plain, subscribed };
}

/** Rows of webhook_deliveries PostgreSQL has read by sequential scans so far. */
async function seqRead(sql: Sql): Promise<number> {
  const [row] = await sql<{ n: string }[]>`
    select coalesce(seq_tup_read, 0)::text as n from pg_stat_user_tables where relname = 'webhook_deliveries'`;
  return Number(row?.n ?? 0);
}

/** Write `EVENTS` events of the owner, publishing (and, with `deliver`, delivering) as they go; print the round's row. */
async function round(s: Setup, label: string, ownerId: string, deliver: boolean): Promise<void> {
  const { sql, deps, postmaster, receiver } = s;
  await sql`checkpoint`;
  const [{ lsn } = { lsn: '0/0' }] = await sql<{ lsn: string }[]>`select pg_current_wal_lsn()::text as lsn`;
  const pg0 = clusterCpuSeconds(postmaster);
  const self0 = selfCpuSeconds();
  const receiver0 = cpuSeconds(receiver.child.pid!)?.cpu ?? 0;
  const started = performance.now();
  let written = 0;
  let delivered = 0;
  while (written < EVENTS) {
    for (let i = 0; i < CHUNKS_PER_STEP && written < EVENTS; i++) {
      const n = Math.min(CHUNK, EVENTS - written);
      await writeEvents(sql, ownerId, n);
      written += n;
    }
    for (let r = await publishEvents(sql, 1000); r.published === 1000; r = await publishEvents(sql, 1000));
    if (!deliver) continue;
    const groups = await claimDueDeliveries(sql, 1000, GROUP);
    const results = await Promise.all(groups.map((g) => deliverGroup(deps, g as DeliveryGroupJob)));
    for (const r of results) delivered += r.recorded;
  }
  const ms = performance.now() - started;
  const pgCpu = clusterCpuSeconds(postmaster) - pg0;
  const selfCpu = selfCpuSeconds() - self0;
  const receiverCpu = (cpuSeconds(receiver.child.pid!)?.cpu ?? 0) - receiver0;
  const [{ bytes } = { bytes: '0' }] = await sql<{ bytes: string }[]>`
    select pg_wal_lsn_diff(pg_current_wal_lsn(), ${lsn}::pg_lsn)::text as bytes`;
  if (deliver && delivered !== EVENTS) throw new Error(`${delivered} of ${EVENTS} deliveries recorded`);
  const per = (seconds: number) => `${Math.round((seconds * 1e6) / EVENTS)} µs`;
  console.log(
    `| ${label} | ${EVENTS} | ${delivered} | ${per(pgCpu)} | ${per(selfCpu)} | ${per(receiverCpu)} | ${Math.round(Number(bytes) / EVENTS)} B | ${Math.round((EVENTS * 1000) / ms)}/s |`,
  );
}

/** The statements since the last reset, by PostgreSQL execution time, and the delivery log's sequential-scan rows since `seqBefore`. */
async function printStatements(sql: Sql, seqBefore: number): Promise<void> {
  // Statistics reach the shared views when each backend flushes them (PostgreSQL 15).
  await sql`select pg_stat_force_next_flush()`;
  await new Promise((resolve) => setTimeout(resolve, 1500));
  console.log(`\nRound ${ROUNDS} with an endpoint, by PostgreSQL execution time:\n`);
  console.log('| statement | calls | rows | execution, total | per event of the round |');
  console.log('|---|---:|---:|---:|---:|');
  const statements = await sql<{ calls: number; rows: number; ms: number; query: string }[]>`
    select calls::int, rows::int, total_exec_time as ms, query from pg_stat_statements
    where dbid = (select oid from pg_database where datname = current_database()) and calls > 1
    order by total_exec_time desc limit 8`;
  for (const s of statements) {
    const text = s.query.replace(/\s+/g, ' ').trim().slice(0, 90).replaceAll('|', '\\|');
    console.log(`| \`${text}…\` | ${s.calls} | ${s.rows} | ${Math.round(s.ms)} ms | ${((s.ms * 1000) / EVENTS).toFixed(1)} µs |`);
  }
  console.log(`\nrows of webhook_deliveries read by sequential scans in that round: ${(await seqRead(sql)) - seqBefore}`);
}

async function main() {
  const receiver = await startReceiver();
  const pg = await startPostgres();
  try {
    const { sql, deps, plain, subscribed } = await prepareDatabase(pg, receiver.url);
    const setup: Setup = { sql, deps, postmaster: pg.pid()!, receiver };
    console.log(
      '| round | events | deliveries | PostgreSQL CPU / event | worker CPU / event (this process) | receiver CPU / event | WAL / event | events/s |',
    );
    console.log('|---|---:|---:|---:|---:|---:|---:|---:|');
    let seqBefore = 0;
    for (let r = 1; r <= ROUNDS; r++) {
      await round(setup, `${r}: no endpoint`, plain.ownerId, false);
      if (r === ROUNDS) {
        await sql`select pg_stat_statements_reset()`;
        seqBefore = await seqRead(sql);
      }
      await round(setup, `${r}: one endpoint`, subscribed.ownerId, true);
    }
    await printStatements(sql, seqBefore);
    await sql.end({ timeout: 2 });
  } finally {
    receiver.child.kill();
    await pg.stop();
  }
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
