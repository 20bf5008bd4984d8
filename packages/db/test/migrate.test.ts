import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import { afterAll, describe, expect, it } from 'vitest';
import { MIGRATIONS_DIR, migrate } from '@quest/db/migrate';
import { testServers, uniqueName } from '@quest/testing';

/** Every migration in the folder, as migrate() reports them: `00001 init`, … */
const ALL_MIGRATIONS = readdirSync(MIGRATIONS_DIR)
  .filter((f) => /^\d{5}_/.test(f))
  .sort()
  .map((f) => `${f.slice(0, 5)} ${f.slice(6).replace(/-/g, ' ')}`);

const created: string[] = [];
async function freshUrl(): Promise<string> {
  const { postgresUrl } = await testServers();
  const url = new URL(postgresUrl);
  const name = uniqueName('qr_mig');
  created.push(name);
  url.pathname = `/${name}`;
  return url.toString();
}

afterAll(async () => {
  const { postgresUrl } = await testServers();
  const admin = postgres(postgresUrl, { max: 1, onnotice: () => {} });
  for (const name of created) await admin.unsafe(`drop database if exists "${name}" with (force)`);
  await admin.end();
});

const migrateBin = fileURLToPath(new URL('../src/bin/migrate.ts', import.meta.url));
function runMigrateProcess(url: string): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', migrateBin], { env: { ...process.env, DATABASE_URL: url } });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('exit', (code) => resolve({ code, out }));
  });
}

describe('migrate', () => {
  it('creates a missing database, applies the schema once, and is a no-op the second time', async () => {
    const url = await freshUrl();
    const first = await migrate(url);
    expect(first.createdDatabase).toBe(true);
    expect(first.applied).toEqual(ALL_MIGRATIONS);
    const second = await migrate(url);
    expect(second).toEqual({ createdDatabase: false, applied: [] });
    const sql = postgres(url, { max: 1 });
    const tables = await sql<
      { t: string }[]
    >`select table_name as t from information_schema.tables where table_schema = 'public' order by 1`;
    expect(tables.map((r) => r.t)).toEqual([
      'accounts',
      'allocation_rejections',
      'allocation_requests',
      'api_keys',
      'batches',
      'campaigns',
      'console_sessions',
      'events',
      'feature_flags',
      'migrations',
      'owners',
      'payouts',
      'quests',
      'reversal_rejections',
      'reversals',
      'webhook_deliveries',
      'webhook_endpoints',
    ]);
    const flags = await sql`select name, enabled from feature_flags order by name`;
    expect(flags).toEqual([
      { name: 'campaigns', enabled: true },
      { name: 'quests', enabled: true },
    ]);
    await sql.end();
  });

  it('lets two processes migrate the same new database at once without racing', async () => {
    const url = await freshUrl();
    const [a, b] = await Promise.all([runMigrateProcess(url), runMigrateProcess(url)]);
    expect(a.code, a.out).toBe(0);
    expect(b.code, b.out).toBe(0);
    // Exactly one of them applied the migrations; the other found the schema up to date.
    expect([a.out, b.out].filter((o) => o.includes(`applied: ${ALL_MIGRATIONS.join(', ')}`))).toHaveLength(1);
    expect([a.out, b.out].filter((o) => o.includes('schema is up to date'))).toHaveLength(1);
    const sql = postgres(url, { max: 1 });
    const rows = await sql`select migration_id from migrations order by 1`;
    expect(rows.map((r) => r.migration_id)).toEqual(ALL_MIGRATIONS.map((_, i) => i + 1));
    await sql.end();
  });

  it('the database enforces the ledger constraints', async () => {
    const url = await freshUrl();
    await migrate(url);
    const sql = postgres(url, { max: 1, onnotice: () => {} });
    await sql`insert into owners (id, name, pass_address) values ('own_a', 'A', ${'0x' + 'a'.repeat(40)})`;
    await expect(
      sql`insert into owners (id, name, pass_address) values ('own_b', 'B', ${'0x' + 'a'.repeat(40)})`,
    ).rejects.toMatchObject({ code: '23505' });
    await expect(sql`insert into owners (id, name, pass_address) values ('own_c', 'C', 'not-an-address')`).rejects.toMatchObject({
      code: '23514',
    });
    const [q] = await sql`insert into quests (owner_id, name, start_at, end_at, total_points, points_remaining)
      values ('own_a', 'Q', now(), now() + interval '1 day', 100, 100) returning id`;
    await expect(sql`update quests set points_remaining = -1 where id = ${q!.id}`).rejects.toMatchObject({ code: '23514' });
    await expect(sql`update quests set points_remaining = 101 where id = ${q!.id}`).rejects.toMatchObject({ code: '23514' });
    const [acc] = await sql`insert into accounts (pass_address) values (${'0x' + 'b'.repeat(40)}) returning id`;
    await expect(
      sql`insert into payouts (id, quest_id, account_id, amount, request_key, created_at) values ('pay_1', ${q!.id}, ${acc!.id}, 0, 'k', now())`,
    ).rejects.toMatchObject({ code: '23514' });
    await sql`insert into payouts (id, quest_id, account_id, amount, request_key, created_at) values ('pay_1', ${q!.id}, ${acc!.id}, 5, 'k', now())`;
    await expect(
      sql`insert into payouts (id, quest_id, account_id, amount, request_key, created_at) values ('pay_2', ${q!.id}, ${acc!.id}, 5, 'k', now())`,
    ).rejects.toMatchObject({ code: '23505' });
    // A batch item is one request too: its (batch, index) can be credited once.
    await sql`insert into payouts (id, quest_id, account_id, amount, request_key, batch_id, item_index, created_at) values ('pay_b1', ${q!.id}, ${acc!.id}, 5, 'b:0', 'bat_x', 0, now())`;
    await expect(
      sql`insert into payouts (id, quest_id, account_id, amount, request_key, batch_id, item_index, created_at) values ('pay_b2', ${q!.id}, ${acc!.id}, 5, 'b:0-again', 'bat_x', 0, now())`,
    ).rejects.toMatchObject({ code: '23505' });
    await expect(
      sql`insert into payouts (id, quest_id, account_id, amount, request_key, batch_id, created_at) values ('pay_b3', ${q!.id}, ${acc!.id}, 5, 'b:1', 'bat_x', now())`,
    ).rejects.toMatchObject({ code: '23514' });
    await expect(
      sql`insert into payouts (id, quest_id, account_id, amount, request_key, created_at) values ('pay_3', 999, ${acc!.id}, 5, 'k2', now())`,
    ).rejects.toMatchObject({ code: '23503' });
    // A reversal takes back a positive amount of a payout that exists, once per request key (its id).
    const reverse = (id: string, payoutId: string, amount: number) =>
      sql`insert into reversals (id, quest_id, payout_id, account_id, amount, created_at) values (${id}, ${q!.id}, ${payoutId}, ${acc!.id}, ${amount}, now())`;
    await reverse('rev_1', 'pay_1', 2);
    await expect(reverse('rev_1', 'pay_1', 1)).rejects.toMatchObject({ code: '23505' });
    await expect(reverse('rev_2', 'pay_1', 0)).rejects.toMatchObject({ code: '23514' });
    await expect(reverse('rev_3', 'pay_missing', 1)).rejects.toMatchObject({ code: '23503' });
    await expect(reverse('not_a_rev', 'pay_1', 1)).rejects.toMatchObject({ code: '23514' });
    await sql.end();
  });

  it('a migration waiting for a busy table gives up after its lock timeout, lets the queue behind it through, and tries again', async () => {
    const url = await freshUrl();
    const dirs = mkdtempSync(join(tmpdir(), 'quest-migrations-'));
    const write = (dir: string, name: string, body: string) => {
      mkdirSync(join(dirs, dir, name), { recursive: true });
      writeFileSync(join(dirs, dir, name, 'index.sql'), body);
    };
    write('first', '00001_table', 'create table t (id int);');
    write('both', '00001_table', 'create table t (id int);');
    write('both', '00002_alter', 'alter table t add column x int;');
    const blocker = postgres(url, { max: 1, onnotice: () => {} });
    const reader = postgres(url, { max: 1, onnotice: () => {} });
    try {
      await migrate(url, { dir: join(dirs, 'first') });
      // A long transaction reads t: ALTER TABLE needs an exclusive lock, and waits for it.
      let release!: () => void;
      const released = new Promise<void>((r) => (release = r));
      let reading!: () => void;
      const holding = new Promise<void>((r) => (reading = r));
      const longRead = blocker.begin(async (tx) => {
        await tx`select count(*) from t`;
        reading();
        await released;
      });
      await holding;
      let retried!: () => void;
      const gaveUp = new Promise<void>((r) => (retried = r));
      const migrating = migrate(url, { dir: join(dirs, 'both'), lockTimeoutMs: 200, logger: { warn: () => retried() } });
      await gaveUp;
      // Not queued behind the waiting migration for longer than its lock timeout: this read ends
      // while the long transaction still holds its lock.
      expect(await reader`select count(*)::int as n from t`).toEqual([{ n: 0 }]);
      release();
      await longRead;
      expect((await migrating).applied).toEqual(['00002 alter']);
      expect(await reader`select column_name as c from information_schema.columns where table_name = 't' order by 1`).toEqual([
        { c: 'id' },
        { c: 'x' },
      ]);
    } finally {
      await blocker.end();
      await reader.end();
      rmSync(dirs, { recursive: true, force: true });
    }
  });
});
