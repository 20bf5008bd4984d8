import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSql, type Sql } from '@quest/db';
import { importAccounts } from '@quest/db/accounts';
import { type AuditReport, audit } from '@quest/db/audit';
import { type CliRun, runCli } from '@quest/testing/cli';
import type { BaseCtx, ScenarioOutput, Verdict } from '../context.ts';
import { cpuNote } from '../figures.ts';
import { measured } from '../measure.ts';
import { seedQuests } from '../seed.ts';
import { adminEntry } from '../services.ts';
import { groupThousands } from '../stats.ts';
import { finish } from '../verify.ts';

/**
 * admin: the operator CLI against the database, no service running.
 *
 * - `quest-admin account import --file <100,000 rows> --json`, the real CLI process as an operator
 *   runs it (bundled as `npm run build` bundles it; --runtime tsx: apps/admin/bin/quest-admin.js
 *   through tsx), timed from spawn to exit; its limit is
 *   the same `importAccounts` the CLI calls, in this process over the same number of addresses
 *   (no process start, no CSV parsing). Goal: 100,000 rows in < 10 s.
 * - `quest-admin audit --json` over 1,000,000 payouts (written first with set-based SQL: 100
 *   quests, spread over 20,000 accounts, budgets and balances kept consistent); its limit is
 *   `audit()` called in this process. Goal: < 10 s.
 *
 * Correctness: the import creates every row once (CLI and limit), both audits report a
 * consistent ledger over the same counts, and the bench's own ledger checks pass.
 */

const AUDIT_QUESTS = 100;
const AUDIT_ACCOUNTS = 20_000;
export const IMPORT_GOAL_S = 10;
export const AUDIT_GOAL_S = 10;
/** The CLI, its backends and PostgreSQL's parallel workers exit within the run: sample their CPU. */
const SAMPLED = { sampleEveryMs: 50 };

const randomAddresses = (n: number) => Array.from({ length: n }, () => `0x${randomBytes(20).toString('hex')}`);

function runAdminCli(args: string[], databaseUrl: string): Promise<CliRun> {
  return runCli(args, { bin: adminEntry(), env: { PATH: process.env.PATH, HOME: process.env.HOME, DATABASE_URL: databaseUrl } });
}

/** The --json object a run printed, if it printed one. */
function parseJson<T>(run: CliRun): Partial<T> | undefined {
  try {
    return JSON.parse(run.stdout) as Partial<T>;
  } catch {
    return undefined;
  }
}

/** A pool for the in-process limit, connected before anything is timed. */
async function limitPool(databaseUrl: string): Promise<Sql> {
  const sql = createSql(databaseUrl, { max: 2, idleTimeout: 0, applicationName: 'quest-bench-limit' });
  await Promise.all([sql`select 1`, sql`select 1`]);
  return sql;
}

/** `count` payouts over `AUDIT_QUESTS` new quests and the first `AUDIT_ACCOUNTS` accounts, keeping the ledger consistent. */
async function seedPayouts(ctx: BaseCtx, count: number): Promise<void> {
  const { sql } = ctx.infra;
  const [{ n: accounts } = { n: 0 }] = await sql<{ n: number }[]>`select count(*)::int as n from accounts`;
  if (accounts < AUDIT_ACCOUNTS) {
    await sql`insert into accounts (pass_address) select * from unnest(${randomAddresses(AUDIT_ACCOUNTS - accounts)}::text[])`;
  }
  const quests = await seedQuests(sql, ctx.owner.ownerId, AUDIT_QUESTS, 'audit');
  const step = 250_000;
  for (let from = 1; from <= count; from += step) {
    const to = Math.min(count, from + step - 1);
    await sql`
      insert into payouts (id, quest_id, account_id, amount, request_key, created_at)
      select 'pay_bench_audit_' || g, q.ids[1 + g % ${AUDIT_QUESTS}::int], a.ids[1 + g % ${AUDIT_ACCOUNTS}::int],
             1 + g % 7, 'bench-audit-' || g, now()
      from generate_series(${from}::int, ${to}::int) g,
           (select ${quests}::int[] as ids) q,
           (select array(select id from accounts order by id limit ${AUDIT_ACCOUNTS}::int) as ids) a`;
  }
  await sql`
    update quests q set points_remaining = q.points_remaining - p.paid
    from (select quest_id, sum(amount) as paid from payouts where quest_id = any(${quests}::int[]) group by 1) p
    where p.quest_id = q.id`;
  await sql`
    update accounts a set balance = a.balance + p.paid
    from (select account_id, sum(amount) as paid from payouts where quest_id = any(${quests}::int[]) group by 1) p
    where p.account_id = a.id`;
}

/**
 * `quest-admin account import` of `cfg.importRows` new addresses (a CSV file in `dir`), then its
 * limit, `importAccounts` of as many others in this process; what failed of their checks.
 */
async function measureImport(ctx: BaseCtx, dir: string, pool: Sql) {
  const { cfg, infra } = ctx;
  const n = cfg.importRows;
  const fileAddresses = randomAddresses(n);
  const file = join(dir, 'accounts.csv');
  await writeFile(file, `pass\n${fileAddresses.join('\n')}\n`);
  ctx.log(`admin: quest-admin account import of ${groupThousands(n)} rows`);
  const cliImport = await measured(
    ctx,
    'admin import (CLI)',
    () => runAdminCli(['account', 'import', '--file', file, '--json'], infra.databaseUrl),
    SAMPLED,
  );
  const imported = parseJson<{ created: number; skipped: number; invalid: number }>(cliImport.result);
  const importReasons: string[] = [];
  if (cliImport.result.code !== 0 || imported?.created !== n || imported?.skipped !== 0 || imported?.invalid !== 0)
    importReasons.push(
      `CLI import: exit ${cliImport.result.code}, ${cliImport.result.stdout.slice(0, 200)} ${cliImport.result.stderr.slice(0, 300)}`,
    );
  const [{ stored } = { stored: 0 }] = await infra.sql<{ stored: number }[]>`
    select count(*)::int as stored from accounts where lower(pass_address) = any(${fileAddresses}::text[])`;
  if (stored !== n) importReasons.push(`CLI import: ${stored} of ${n} accounts in the database`);

  ctx.log(`admin: limit, importAccounts of ${groupThousands(n)} addresses in this process`);
  const direct = randomAddresses(n);
  const limitImport = await measured(ctx, 'admin import (limit)', () => importAccounts(pool, direct), SAMPLED);
  if (limitImport.result.created !== n) importReasons.push(`limit import: ${limitImport.result.created} of ${n} created`);
  return { n, cliImport, limitImport, imported, importReasons };
}

/**
 * `cfg.auditPayouts` payouts written (not measured), then `quest-admin audit` and its limit,
 * `audit()` in this process; what failed of their checks.
 */
async function measureAudit(ctx: BaseCtx, pool: Sql) {
  const { cfg, infra } = ctx;
  ctx.log(`admin: writing ${groupThousands(cfg.auditPayouts)} payouts for the audit`);
  const seedStarted = Date.now();
  await seedPayouts(ctx, cfg.auditPayouts);
  const seedS = (Date.now() - seedStarted) / 1000;
  ctx.log(`admin: seeded in ${seedS.toFixed(1)} s; quest-admin audit`);
  const cliAudit = await measured(ctx, 'admin audit (CLI)', () => runAdminCli(['audit', '--json'], infra.databaseUrl), SAMPLED);
  ctx.log('admin: limit, audit() in this process');
  const limitAudit = await measured(ctx, 'admin audit (limit)', () => audit(pool), SAMPLED);
  const report = parseJson<AuditReport>(cliAudit.result);
  const payouts: number = limitAudit.result.checked.payouts;
  const auditReasons: string[] = [];
  if (cliAudit.result.code !== 0 || report?.ok !== true)
    auditReasons.push(
      `CLI audit: exit ${cliAudit.result.code}, ${cliAudit.result.stdout.slice(0, 300)} ${cliAudit.result.stderr.slice(0, 300)}`,
    );
  if (!limitAudit.result.ok) auditReasons.push(`limit audit: ${JSON.stringify(limitAudit.result.violations)}`);
  if (report && JSON.stringify(report.checked) !== JSON.stringify(limitAudit.result.checked))
    auditReasons.push(
      `CLI and limit audits checked different rows: ${JSON.stringify([report.checked, limitAudit.result.checked])}`,
    );
  if (payouts < cfg.auditPayouts)
    auditReasons.push(`audit checked ${payouts} payouts, fewer than the ${cfg.auditPayouts} written`);
  return { seedS, cliAudit, limitAudit, payouts, auditReasons };
}

export async function adminScenario(ctx: BaseCtx): Promise<ScenarioOutput> {
  const { infra } = ctx;
  const verdicts: Verdict[] = [];
  const check = (reasons: string[]) => verdicts.push({ ok: reasons.length === 0, reasons });
  const dir = await mkdtemp(join(tmpdir(), 'quest-bench-admin-'));
  const pool = await limitPool(infra.databaseUrl);
  try {
    const { n, cliImport, limitImport, imported, importReasons } = await measureImport(ctx, dir, pool);
    check(importReasons);
    const { seedS, cliAudit, limitAudit, payouts, auditReasons } = await measureAudit(ctx, pool);
    check(auditReasons);

    const rows = `${groupThousands(n)} rows`;
    return await finish(
      ctx,
      'admin',
      verdicts,
      [
        {
          metric: `account import, ${rows} (goal < ${IMPORT_GOAL_S} s; limit: importAccounts)`,
          unit: 's',
          service: cliImport.wallS,
          limit: limitImport.wallS,
        },
        { metric: 'account import rate (rows/s)', unit: '/s', service: n / cliImport.wallS, limit: n / limitImport.wallS },
        {
          metric: `audit, ${groupThousands(payouts)} payouts (goal < ${AUDIT_GOAL_S} s; limit: audit())`,
          unit: 's',
          service: cliAudit.wallS,
          limit: limitAudit.wallS,
        },
      ],
      {
        import: {
          rows: n,
          cliS: cliImport.wallS,
          limitS: limitImport.wallS,
          cli: imported,
          cpu: { cli: cliImport.cpu, limit: limitImport.cpu },
        },
        audit: {
          payouts,
          seedS,
          cliS: cliAudit.wallS,
          limitS: limitAudit.wallS,
          checked: limitAudit.result.checked,
          cpu: { cli: cliAudit.cpu, limit: limitAudit.cpu },
        },
      },
      [
        `admin: import ${rows}: quest-admin ${cliImport.wallS.toFixed(2)} s (spawn to exit), importAccounts ${limitImport.wallS.toFixed(2)} s; ` +
          `audit of ${groupThousands(payouts)} payouts: quest-admin ${cliAudit.wallS.toFixed(2)} s, audit() ${limitAudit.wallS.toFixed(2)} s (seeding took ${seedS.toFixed(1)} s, not measured)`,
        cpuNote('admin import (CLI)', cliImport.wallS, cliImport.cpu),
        cpuNote('admin import (limit)', limitImport.wallS, limitImport.cpu),
        cpuNote('admin audit (CLI)', cliAudit.wallS, cliAudit.cpu),
        cpuNote('admin audit (limit)', limitAudit.wallS, limitAudit.cpu),
      ],
    );
  } finally {
    await pool.end({ timeout: 2 }).catch(() => {});
    await rm(dir, { recursive: true, force: true });
  }
}
