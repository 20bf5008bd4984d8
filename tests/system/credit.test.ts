import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateApiKey } from '@quest/domain';
import { type ServiceProcess, startProcess } from '@quest/testing';
import { address, auditViolations, seed, startSystem, type System } from './harness.ts';

/**
 * `quest-admin credit` end to end: the real CLI process against the real API and worker
 * processes, on a database of its own. One API answers batches synchronously (200); a second one
 * on the same database and queues waits 0 ms, so every batch is answered 202 and followed.
 */

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BIN = 'apps/admin/bin/quest-admin.js';
const ROWS = 20_000;

let system: System;
let owner: Awaited<ReturnType<typeof seed>>;
let asyncApi: ServiceProcess;
let asyncUrl: string;
let dir: string;

beforeAll(async () => {
  system = await startSystem({ workers: 1, partitions: 4, env: { JOB_RETENTION_SECONDS: '600' } });
  owner = await seed(system, { quests: 1, accounts: ROWS });
  asyncApi = await startProcess(
    'apps/api/src/server.ts',
    { ...system.env, PORT: '0', BATCH_WAIT_MS: '0' },
    /Server listening at http:\/\/127\.0\.0\.1:\d+/,
  );
  asyncUrl = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(asyncApi.output())![1]!;
  dir = await mkdtemp(join(tmpdir(), 'quest-credit-'));
}, 120_000);
afterAll(async () => {
  await asyncApi?.stop('SIGKILL');
  await system?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

function startCli(args: readonly string[]): { child: ChildProcess; result: Promise<CliResult> } {
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: REPO_ROOT,
    // From scratch: no developer API_BASE_URL leaking in. The credit command needs no database,
    // but the CLI's environment requires the variable.
    env: { PATH: process.env.PATH, HOME: process.env.HOME, DATABASE_URL: system.db.url },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const result = new Promise<CliResult>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
  return { child, result };
}
const cli = (...args: string[]) => startCli(args).result;

function credit(questId: number, file: string, opts: { key?: string; baseUrl?: string; extra?: string[] } = {}) {
  return [
    'credit',
    '--quest',
    String(questId),
    '--key',
    opts.key ?? owner.apiKey,
    '--file',
    file,
    '--base-url',
    opts.baseUrl ?? system.baseUrl,
    '--json',
    ...(opts.extra ?? []),
  ];
}

/** The single JSON object on stdout. */
function jsonOf(result: CliResult): any {
  const lines = result.stdout.split('\n').filter((l) => l !== '');
  expect(lines, `stdout: ${result.stdout}\nstderr: ${result.stderr}`).toHaveLength(1);
  return JSON.parse(lines[0]!);
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

function expectNoStack(result: CliResult): void {
  expect(result.stderr).not.toMatch(/\n\s+at .+:\d+:\d+/);
  expect(result.stdout).not.toMatch(/\n\s+at .+:\d+:\d+/);
}

async function newQuest(total: number): Promise<number> {
  const [row] = await system.db.sql<{ id: number }[]>`
    insert into quests (owner_id, name, start_at, end_at, total_points, points_remaining)
    values (${owner.ownerId}, 'credit', now() - interval '1 hour', now() + interval '1 day', ${total}, ${total}) returning id`;
  return row!.id;
}

interface Row {
  address: string;
  points: string;
}

async function writeCsv(name: string, rows: readonly Row[]): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, `address,points\n${rows.map((r) => `${r.address},${r.points}`).join('\n')}\n`);
  return path;
}

/** What the service must decide for each row, in file order (the domain's check order: budget, then account). */
function expectedOutcomes(rows: readonly Row[], total: number, known: ReadonlySet<string>) {
  let remaining = total;
  return rows.map((r, i) => {
    const line = i + 2;
    const points = Number(r.points);
    if (!/^0x[0-9a-fA-F]{40}$/.test(r.address) || !/^\d+$/.test(r.points) || points < 1)
      return { line, ...r, code: 'INVALID_ROW' };
    if (points > remaining) return { line, ...r, code: 'INSUFFICIENT_POINTS' };
    if (!known.has(r.address)) return { line, ...r, code: 'ACCOUNT_NOT_FOUND' };
    remaining -= points;
    return { line, ...r, code: null };
  });
}

async function payoutsOf(questId: number) {
  const [row] = await system.db.sql<{ n: number; s: number }[]>`
    select count(*)::int as n, coalesce(sum(amount), 0)::int8 as s from payouts where quest_id = ${questId}`;
  return { n: row!.n, s: Number(row!.s) };
}

async function failedRowsOf(path: string): Promise<string[][]> {
  const lines = (await readFile(path, 'utf8')).split('\n').filter((l) => l !== '');
  expect(lines[0]).toBe('line,address,points,code');
  return lines.slice(1).map((l) => l.split(','));
}

describe('quest-admin credit', () => {
  it('credits a 20,000-row CSV: counts match the database, one payout per row, failed rows listed with their codes', async () => {
    const unknown = (i: number) => i < 15_000 && i % 1000 === 500;
    const huge = (i: number) => i < 15_000 && i % 2500 === 1234;
    const rows: Row[] = Array.from({ length: ROWS }, (_, i) => ({
      address: unknown(i) ? address(0x7000_0000 + i) : address(i + 1),
      points: huge(i) ? '1000000000000' : String(1 + (i % 7)),
    }));
    rows[100] = { address: 'not-an-address', points: '5' };
    rows[7777] = { address: address(7778), points: '0' };
    rows[12_345] = { address: address(12_346).toLowerCase(), points: '1.5' };
    // The budget covers exactly the creditable rows among the first 19,000: every later row is
    // over budget, which holds only if batches are decided in file order.
    const known = new Set(owner.accounts);
    let total = 0;
    for (const o of expectedOutcomes(rows.slice(0, 19_000), Number.MAX_SAFE_INTEGER, known)) {
      if (o.code === null) total += Number(o.points);
    }
    const questId = await newQuest(total);
    const expected = expectedOutcomes(rows, total, known);
    const credited = expected.filter((o) => o.code === null);
    const failed = expected.filter((o) => o.code !== null);
    expect(failed.length).toBeGreaterThan(1000);

    const file = await writeCsv('twenty-thousand.csv', rows);
    const started = Date.now();
    const result = await cli(...credit(questId, file));
    const wallMs = Date.now() - started;
    expect(result.code, result.stderr).toBe(0);
    expectNoStack(result);
    const summary = jsonOf(result);
    expect(summary).toEqual({
      quest: questId,
      file,
      batches: 4,
      total: ROWS,
      succeeded: credited.length,
      failed: failed.length,
      failedFile: `${file}.failed.csv`,
      elapsedMs: expect.any(Number),
    });
    console.log(
      `credit: ${ROWS} rows in ${summary.elapsedMs} ms inside the CLI (${Math.round(ROWS / (summary.elapsedMs / 1000))} rows/s); ` +
        `${wallMs} ms wall including process start (${Math.round(ROWS / (wallMs / 1000))} rows/s)`,
    );

    // The database: one payout per creditable row, with its points, and nothing else.
    expect(await payoutsOf(questId)).toEqual({ n: credited.length, s: total });
    const payouts = await system.db.sql<{ pass_address: string; amount: number }[]>`
      select a.pass_address, p.amount::int8 as amount from payouts p join accounts a on a.id = p.account_id
      where p.quest_id = ${questId}`;
    const paid = new Map(payouts.map((p) => [p.pass_address, Number(p.amount)]));
    expect(paid.size).toBe(payouts.length);
    for (const o of credited) expect(paid.get(o.address), `line ${o.line}`).toBe(Number(o.points));
    const [quest] = await system.db.sql<
      { points_remaining: number }[]
    >`select points_remaining from quests where id = ${questId}`;
    expect(Number(quest!.points_remaining)).toBe(0);

    // The failed rows, in file order, exactly the rejected and invalid ones, with their codes.
    expect(await failedRowsOf(`${file}.failed.csv`)).toEqual(failed.map((o) => [String(o.line), o.address, o.points, o.code]));
    const codes = new Set(failed.map((o) => o.code));
    expect(codes).toEqual(new Set(['INVALID_ROW', 'INSUFFICIENT_POINTS', 'ACCOUNT_NOT_FOUND']));
    expect(await auditViolations(system)).toEqual([]);
  }, 120_000);

  it('an interrupted run, re-run, credits every row exactly once; a third run credits nothing; another batch size is refused', async () => {
    const rows: Row[] = Array.from({ length: ROWS }, (_, i) => ({ address: address(i + 1), points: String(1 + (i % 5)) }));
    rows[3] = { address: '0xzz', points: '1' };
    rows[15_000] = { address: address(15_001), points: '-2' };
    const valid = rows.filter((_, i) => i !== 3 && i !== 15_000);
    const validSum = valid.reduce((t, r) => t + Number(r.points), 0);
    const questId = await newQuest(1_000_000_000);
    const file = await writeCsv('interrupted.csv', rows);
    const args = (baseUrl: string, batchSize = '1000') => credit(questId, file, { baseUrl, extra: ['--batch-size', batchSize] });

    // Run 1, through the API that answers 202: killed once the first batch has been credited.
    const first = startCli(args(asyncUrl));
    const deadline = Date.now() + 60_000;
    while ((await payoutsOf(questId)).n === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    first.child.kill('SIGKILL');
    const killed = await first.result;
    expect(killed.signal, killed.stderr).toBe('SIGKILL');
    // Let the batch the service had already taken finish, then check the run really was cut short.
    for (let settled = false; !settled; await new Promise((r) => setTimeout(r, 50))) {
      const open = await system.db.sql`select 1 from batches where quest_id = ${questId} and status in ('pending', 'processing')`;
      settled = open.length === 0;
    }
    const partial = await payoutsOf(questId);
    expect(partial.n).toBeGreaterThan(0);
    expect(partial.n).toBeLessThan(valid.length);

    // Run 2, through the synchronous API: completes the rest.
    const second = await cli(...args(system.baseUrl));
    expect(second.code, second.stderr).toBe(0);
    const expectedSummary = {
      quest: questId,
      file,
      batches: 20,
      total: ROWS,
      succeeded: valid.length,
      failed: 2,
      failedFile: `${file}.failed.csv`,
      elapsedMs: expect.any(Number),
    };
    expect(jsonOf(second)).toEqual(expectedSummary);
    const exactlyOnce = async () => {
      expect(await payoutsOf(questId)).toEqual({ n: valid.length, s: validSum });
      const duplicates = await system.db.sql`
        select account_id from payouts where quest_id = ${questId} group by account_id having count(*) > 1
        union all
        select 1 from payouts where quest_id = ${questId} group by batch_id, item_index having count(*) > 1`;
      expect(duplicates).toHaveLength(0);
      const [batches] = await system.db.sql<{ n: number }[]>`select count(*)::int as n from batches where quest_id = ${questId}`;
      expect(batches!.n).toBe(20);
      expect(await auditViolations(system)).toEqual([]);
    };
    await exactlyOnce();
    expect(await failedRowsOf(`${file}.failed.csv`)).toEqual([
      ['5', '0xzz', '1', 'INVALID_ROW'],
      ['15002', address(15_001), '-2', 'INVALID_ROW'],
    ]);

    // Run 3, through the 202 API: every batch replays its stored results; nothing new is credited.
    const third = await cli(...args(asyncUrl));
    expect(third.code, third.stderr).toBe(0);
    expect(jsonOf(third)).toEqual(expectedSummary);
    await exactlyOnce();

    // Another batch size would cut other batches: refused on batch 1, nothing credited twice.
    const other = await cli(...args(system.baseUrl, '999'));
    expect(other.code, other.stderr).toBe(1);
    expectNoStack(other);
    const out = jsonOf(other);
    expect(out.error.code).toBe('IDEMPOTENCY_KEY_REUSED');
    expect(out).toMatchObject({ batches: 0, succeeded: 0 });
    expect(other.stderr).toMatch(/^error: batch 1 of 21 \(CSV lines 2–1,001\) was refused with 400 IDEMPOTENCY_KEY_REUSED/m);
    await exactlyOnce();
  }, 180_000);

  it('rides out an API restart mid-run: network errors are retried with the same keys, every row credited once', async () => {
    const port = await freePort();
    const startApi = () =>
      startProcess(
        'apps/api/src/server.ts',
        { ...system.env, PORT: String(port) },
        /Server listening at http:\/\/127\.0\.0\.1:\d+/,
      );
    let api = await startApi();
    try {
      const rows: Row[] = Array.from({ length: 10_000 }, (_, i) => ({ address: address(i + 1), points: '2' }));
      const questId = await newQuest(1_000_000);
      const file = await writeCsv('restart.csv', rows);
      const run = startCli(credit(questId, file, { baseUrl: `http://127.0.0.1:${port}`, extra: ['--batch-size', '500'] }));
      const deadline = Date.now() + 60_000;
      while ((await payoutsOf(questId)).n === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      await api.stop('SIGKILL');
      await new Promise((r) => setTimeout(r, 500));
      api = await startApi();
      const result = await run.result;
      expect(result.code, result.stderr).toBe(0);
      expect(result.stderr).toMatch(/^warning: batch \d+ of 20 .*; retry 1 of 7 in/m);
      expect(jsonOf(result)).toMatchObject({ batches: 20, total: 10_000, succeeded: 10_000, failed: 0, failedFile: null });
      expect(await payoutsOf(questId)).toEqual({ n: 10_000, s: 20_000 });
      const [batches] = await system.db.sql<{ n: number }[]>`select count(*)::int as n from batches where quest_id = ${questId}`;
      expect(batches!.n).toBe(20);
      expect(await auditViolations(system)).toEqual([]);
    } finally {
      await api.stop('SIGKILL');
    }
  }, 120_000);

  it('usage errors exit 2 with a usage message and no stack trace', async () => {
    const file = await writeCsv('usage.csv', [{ address: address(1), points: '1' }]);
    const key = owner.apiKey;
    const cases: [string[], RegExp][] = [
      [['credit', '--quest', '1', '--key', key], /required option '--file <path>' not specified/],
      [['credit', '--quest', '1', '--file', file], /required option '--key <apiKey>' not specified/],
      [['credit', '--key', key, '--file', file], /required option '--quest <questId>' not specified/],
      [
        ['credit', '--quest', '1', '--key', key, '--file', file, '--batch-size', '0'],
        /--batch-size <n>' argument '0' is invalid/,
      ],
      [['credit', '--quest', '1', '--key', key, '--file', file, '--batch-size', '10001'], /from 1 to 10000/],
      [['credit', '--quest', '1', '--key', key, '--file', file, '--batch-size', 'many'], /--batch-size/],
      [['credit', '--quest', '1', '--key', 'secret', '--file', file], /--key <apiKey>' argument 'secret' is invalid/],
      [['credit', '--quest', '1', '--key', key, '--file', file, '--base-url', 'ftp://x'], /--base-url/],
    ];
    const results = await Promise.all(cases.map(([args]) => cli(...args, '--json')));
    for (const [i, result] of results.entries()) {
      expect(result.code, result.stderr).toBe(2);
      expect(result.stdout).toBe('');
      expect(result.stderr).toMatch(cases[i]![1]);
      expect(result.stderr).toMatch(/Usage: quest-admin credit/);
      expectNoStack(result);
    }
  }, 60_000);

  it("a wrong key stops with exit 1 and the API's INVALID_API_KEY; a malformed CSV stops before sending anything", async () => {
    const questId = await newQuest(1000);
    const file = await writeCsv('wrong-key.csv', [
      { address: address(1), points: '1' },
      { address: address(2), points: '2' },
    ]);
    const wrong = await cli(...credit(questId, file, { key: generateApiKey() }));
    expect(wrong.code, wrong.stderr).toBe(1);
    expectNoStack(wrong);
    // One error line (besides progress lines, printed every 2 s on a busy machine).
    const lines = wrong.stderr.trim().split('\n');
    expect(lines.filter((l) => !/^(scanning|crediting)/.test(l))).toEqual([
      expect.stringMatching(/^error: batch 1 of 1 \(CSV lines 2–3\) was refused with 401 INVALID_API_KEY: /),
    ]);
    expect(jsonOf(wrong)).toMatchObject({ quest: questId, batches: 0, succeeded: 0, error: { code: 'INVALID_API_KEY' } });

    const bad = join(dir, 'malformed.csv');
    await writeFile(bad, `address,points\n${address(1)},1\n"${address(2)},2\n`);
    const malformed = await cli(...credit(questId, bad));
    expect(malformed.code).toBe(1);
    expect(jsonOf(malformed).error.code).toBe('INVALID_CSV');
    expect(await payoutsOf(questId)).toEqual({ n: 0, s: 0 });
  }, 60_000);

  it('prints a text summary without --json, and a clean re-run removes a stale failed-rows file', async () => {
    const questId = await newQuest(1000);
    const rows = [
      { address: address(1), points: '10' },
      { address: 'oops', points: '1' },
      { address: address(2), points: '20' },
    ];
    const file = await writeCsv('text.csv', rows);
    const args = credit(questId, file).filter((a) => a !== '--json');
    const result = await cli(...args);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^Credited .*text\.csv to quest \d+\n/);
    expect(result.stdout).toMatch(/ {2}succeeded +2\n/);
    expect(result.stdout).toMatch(/ {2}failed +1 \(INVALID_ROW 1\)\n/);
    expect(result.stdout).toMatch(/rows\/s/);
    expect(await failedRowsOf(`${file}.failed.csv`)).toEqual([['3', 'oops', '1', 'INVALID_ROW']]);

    await writeFile(file, `address,points\n${address(3)},5\n`);
    const clean = await cli(...credit(questId, file));
    expect(jsonOf(clean)).toMatchObject({ succeeded: 1, failed: 0, failedFile: null });
    await expect(readFile(`${file}.failed.csv`)).rejects.toThrow(/ENOENT/);
    expect(await payoutsOf(questId)).toEqual({ n: 3, s: 35 });
  }, 60_000);
});
