import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, vi } from 'vitest';
import type { Sql } from '@quest/db';
import { generateApiKey } from '@quest/domain';
import { deleteKeysWithPrefix } from '@quest/queue';
import { Redis } from 'ioredis';
import {
  auditViolations,
  createAccounts,
  REPO_ROOT,
  serviceEntry,
  startApiProcess,
  startProcess,
  systemTest,
  testAddress,
} from '@quest/testing';
import { MAX_ATTEMPTS } from '../../apps/admin/src/commands/credit.ts';

/**
 * `quest-admin credit` end to end: the real CLI process against the real API and worker
 * processes, on a database of its own. The file's API answers batches synchronously (200); a second
 * one on the same database and queues (`asyncApiUrl`) waits 0 ms, so every batch is answered 202 and
 * followed.
 */

const BIN = 'apps/admin/bin/quest-admin.js';
const ROWS = 5_000;

const test = systemTest({ workers: 1, partitions: 4, env: { JOB_RETENTION_SECONDS: '600' } })
  .extend('asyncApiUrl', { scope: 'file' }, async ({ system }, { onCleanup }) => {
    const { process, baseUrl } = await startApiProcess({ ...system.env, BATCH_WAIT_MS: '0' });
    onCleanup(async () => {
      await process.stop('SIGKILL');
    });
    return baseUrl;
  })
  // biome-ignore lint/correctness/noEmptyPattern: vitest reads a fixture's dependencies from this pattern
  .extend('dir', async ({}, { onCleanup }) => {
    const dir = await mkdtemp(join(tmpdir(), 'quest-credit-'));
    onCleanup(() => rm(dir, { recursive: true, force: true }));
    return dir;
  });

interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

interface RunningCli {
  child: ChildProcess;
  /** What the CLI wrote to stderr so far. */
  stderr(): string;
  result: Promise<CliResult>;
}

function startCli(databaseUrl: string, args: readonly string[]): RunningCli {
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: REPO_ROOT,
    // From scratch: no developer API_BASE_URL leaking in. The credit command needs no database,
    // but the CLI's environment requires the variable.
    env: { PATH: process.env.PATH, HOME: process.env.HOME, DATABASE_URL: databaseUrl },
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
  return { child, stderr: () => stderr, result };
}
const cli = (databaseUrl: string, args: readonly string[]) => startCli(databaseUrl, args).result;

function creditArgs(o: { quest: number; key: string; file: string; baseUrl: string; extra?: string[] }): string[] {
  return [
    'credit',
    '--quest',
    String(o.quest),
    '--key',
    o.key,
    '--file',
    o.file,
    '--base-url',
    o.baseUrl,
    '--json',
    ...(o.extra ?? []),
  ];
}

/** The single JSON object on stdout. */
function jsonOf(result: CliResult): any {
  const lines = result.stdout.split('\n').filter((l) => l !== '');
  expect(lines, `stdout: ${result.stdout}\nstderr: ${result.stderr}`).toHaveLength(1);
  return JSON.parse(lines[0]!);
}

function expectNoStack(result: CliResult): void {
  expect(result.stderr).not.toMatch(/\n\s+at .+:\d+:\d+/);
  expect(result.stdout).not.toMatch(/\n\s+at .+:\d+:\d+/);
}

interface Row {
  address: string;
  points: string;
}

async function writeCsv(dir: string, name: string, rows: readonly Row[]): Promise<string> {
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

/** Batches a run sends: its valid rows, cut every `batchSize`. */
const batchCount = (validRows: number, batchSize: number) => Math.ceil(validRows / batchSize);

async function payoutsOf(sql: Sql, questId: number) {
  const [row] = await sql<{ n: number; s: number }[]>`
    select count(*)::int as n, coalesce(sum(amount), 0)::int8 as s from payouts where quest_id = ${questId}`;
  return { n: row!.n, s: Number(row!.s) };
}

async function batchesOf(sql: Sql, questId: number): Promise<number> {
  const [row] = await sql<{ n: number }[]>`select count(*)::int as n from batches where quest_id = ${questId}`;
  return row!.n;
}

/** The failed-rows file's rows: line, address, points, code, reason (no cell here holds a comma). */
async function failedRowsOf(path: string): Promise<string[][]> {
  const lines = (await readFile(path, 'utf8')).split('\n').filter((l) => l !== '');
  expect(lines[0]).toBe('line,address,points,code,reason');
  return lines.slice(1).map((l) => l.split(','));
}

const BAD_ADDRESS = 'the address is not 0x followed by 40 hexadecimal digits';
const NOT_WHOLE = 'the points are not a whole number (digits only)';

describe('quest-admin credit', () => {
  test('credits a 5,000-row CSV: counts match the database, one payout per row, failed rows listed with their codes', {
    timeout: 120_000,
  }, async ({ system, database, owner, makeQuest, dir }) => {
    const { sql } = database;
    const accounts = await createAccounts(sql, ROWS);
    const unknown = (i: number) => i < 3_750 && i % 250 === 125;
    const huge = (i: number) => i < 3_750 && i % 625 === 309;
    const rows: Row[] = accounts.map((address, i) => ({
      address: unknown(i) ? testAddress(0x7000_0000 + i) : address,
      points: huge(i) ? '1000000000000' : String(1 + (i % 7)),
    }));
    rows[100] = { address: 'not-an-address', points: '5' };
    rows[1944] = { address: accounts[1944]!, points: '0' };
    rows[3086] = { address: accounts[3086]!.toLowerCase(), points: '1.5' };
    // The budget covers exactly the creditable rows among the first 4,750: every later row is
    // over budget, which holds only if batches are decided in file order.
    const known = new Set<string>(accounts);
    let total = 0;
    for (const o of expectedOutcomes(rows.slice(0, 4_750), Number.MAX_SAFE_INTEGER, known)) {
      if (o.code === null) total += Number(o.points);
    }
    const questId = await makeQuest({ totalPoints: total });
    const expected = expectedOutcomes(rows, total, known);
    const credited = expected.filter((o) => o.code === null);
    const failed = expected.filter((o) => o.code !== null);
    const valid = expected.filter((o) => o.code !== 'INVALID_ROW');
    expect(new Set(failed.map((o) => o.code))).toEqual(new Set(['INVALID_ROW', 'INSUFFICIENT_POINTS', 'ACCOUNT_NOT_FOUND']));

    const file = await writeCsv(dir, 'twenty-thousand.csv', rows);
    // 20 batches, 4 in flight: the budget runs out inside batch 19 only if batches are decided in file order.
    const BATCH_SIZE = 250;
    const result = await cli(
      database.url,
      creditArgs({
        quest: questId,
        key: owner.apiKey,
        file,
        baseUrl: system.baseUrl,
        extra: ['--batch-size', String(BATCH_SIZE), '--concurrency', '4'],
      }),
    );
    // Finished, with rows not credited: exit 3, not 0 (a script must not read this as all credited).
    expect(result.code, result.stderr).toBe(3);
    expectNoStack(result);
    expect(jsonOf(result)).toEqual({
      quest: questId,
      file,
      batchSize: BATCH_SIZE,
      batches: batchCount(valid.length, BATCH_SIZE),
      total: ROWS,
      succeeded: credited.length,
      credited: credited.length,
      replayed: 0,
      failed: failed.length,
      failedFile: `${file}.failed.csv`,
      elapsedMs: expect.any(Number),
    });

    // The database: one payout per creditable row, with its points, and nothing else.
    expect(await payoutsOf(sql, questId)).toEqual({ n: credited.length, s: total });
    const payouts = await sql<{ pass_address: string; amount: number }[]>`
        select a.pass_address, p.amount::int8 as amount from payouts p join accounts a on a.id = p.account_id
        where p.quest_id = ${questId}`;
    const paid = new Map(payouts.map((p) => [p.pass_address, Number(p.amount)]));
    expect(paid.size).toBe(payouts.length);
    for (const o of credited) expect(paid.get(o.address), `line ${o.line}`).toBe(Number(o.points));
    const [quest] = await sql<{ points_remaining: number }[]>`select points_remaining from quests where id = ${questId}`;
    expect(Number(quest!.points_remaining)).toBe(0);

    // The failed rows, in file order, exactly the rejected and invalid ones, with their codes and
    // reasons: the reader's for the invalid rows, the service's for the rejected ones.
    const failedRows = await failedRowsOf(`${file}.failed.csv`);
    expect(failedRows.map((r) => r.slice(0, 4))).toEqual(failed.map((o) => [String(o.line), o.address, o.points, o.code]));
    const reasons = new Map(failedRows.map((r) => [r[0], r[4]]));
    expect([102, 1946, 3088].map((line) => reasons.get(String(line)))).toEqual([
      BAD_ADDRESS,
      'the points must be at least 1',
      NOT_WHOLE,
    ]);
    expect(failedRows.filter((r) => r[3] === 'ACCOUNT_NOT_FOUND').map((r) => r[4])).toContain(
      'No account exists for this pass address.',
    );
    expect(failedRows.filter((r) => !r[4])).toEqual([]);
    expect(await auditViolations(sql)).toEqual([]);
  });

  test('an interrupted run, re-run, credits every row exactly once; a third run credits nothing; another batch size is refused', {
    timeout: 180_000,
  }, async ({ system, database, asyncApiUrl, owner, makeQuest, dir }) => {
    const { sql } = database;
    const accounts = await createAccounts(sql, ROWS);
    const rows: Row[] = accounts.map((address, i) => ({ address, points: String(1 + (i % 5)) }));
    rows[3] = { address: '0xzz', points: '1' };
    rows[3_750] = { address: accounts[3_750]!, points: '-2' };
    const valid = rows.filter((_, i) => i !== 3 && i !== 3_750);
    const validSum = valid.reduce((t, r) => t + Number(r.points), 0);
    const questId = await makeQuest({ totalPoints: 1_000_000_000 });
    const file = await writeCsv(dir, 'interrupted.csv', rows);
    const BATCH_SIZE = 250;
    const batches = batchCount(valid.length, BATCH_SIZE);
    const args = (baseUrl: string, batchSize = BATCH_SIZE, concurrency = 4) =>
      creditArgs({
        quest: questId,
        key: owner.apiKey,
        file,
        baseUrl,
        extra: ['--batch-size', String(batchSize), '--concurrency', String(concurrency)],
      });

    // Run 1, through the API that answers 202, 8 batches in flight: killed once the first batch has been credited.
    const first = startCli(database.url, args(asyncApiUrl, BATCH_SIZE, 8));
    await vi.waitFor(
      async () => {
        expect(first.child.exitCode, first.stderr()).toBeNull();
        expect((await payoutsOf(sql, questId)).n).toBeGreaterThan(0);
      },
      { timeout: 60_000, interval: 10 },
    );
    first.child.kill('SIGKILL');
    const killed = await first.result;
    expect(killed.signal, killed.stderr).toBe('SIGKILL');
    // Let the batch the service had already taken finish, then check the run really was cut short.
    await vi.waitFor(
      async () =>
        expect(await sql`select id from batches where quest_id = ${questId} and status in ('pending', 'processing')`).toEqual([]),
      { timeout: 60_000, interval: 50 },
    );
    const partial = await payoutsOf(sql, questId);
    expect(partial.n).toBeGreaterThan(0);
    expect(partial.n).toBeLessThan(valid.length);

    // Run 2, through the synchronous API, 3 in flight: completes the rest. What run 1 had credited is
    // replayed (every batch it sent was finished by the service), the rest newly credited.
    const second = await cli(database.url, args(system.baseUrl, BATCH_SIZE, 3));
    // Two invalid rows: finished with rows not credited.
    expect(second.code, second.stderr).toBe(3);
    const expectedSummary = {
      quest: questId,
      file,
      batchSize: BATCH_SIZE,
      batches,
      total: ROWS,
      succeeded: valid.length,
      failed: rows.length - valid.length,
      failedFile: `${file}.failed.csv`,
      elapsedMs: expect.any(Number),
    };
    // (A request of run 1 that the API was still handling when the CLI died may have added a batch
    // after `partial` was read: replayed is at least what was credited then, not exactly.)
    const secondOut = jsonOf(second);
    expect(secondOut).toEqual({ ...expectedSummary, replayed: expect.any(Number), credited: expect.any(Number) });
    expect(secondOut.replayed).toBeGreaterThanOrEqual(partial.n);
    expect(secondOut.credited).toBeGreaterThan(0);
    expect(secondOut.replayed + secondOut.credited).toBe(valid.length);
    const exactlyOnce = async () => {
      expect(await payoutsOf(sql, questId)).toEqual({ n: valid.length, s: validSum });
      const duplicates = await sql`
          select account_id from payouts where quest_id = ${questId} group by account_id having count(*) > 1
          union all
          select 1 from payouts where quest_id = ${questId} group by batch_id, item_index having count(*) > 1`;
      expect(duplicates).toHaveLength(0);
      expect(await batchesOf(sql, questId)).toBe(batches);
      expect(await auditViolations(sql)).toEqual([]);
    };
    await exactlyOnce();
    expect(await failedRowsOf(`${file}.failed.csv`)).toEqual([
      ['5', '0xzz', '1', 'INVALID_ROW', BAD_ADDRESS],
      ['3752', accounts[3_750], '-2', 'INVALID_ROW', NOT_WHOLE],
    ]);

    // Run 3, through the 202 API: every batch replays its stored results; nothing new is credited,
    // and the text summary says so.
    const third = await cli(database.url, args(asyncApiUrl));
    expect(third.code, third.stderr).toBe(3);
    expect(jsonOf(third)).toEqual({ ...expectedSummary, replayed: valid.length, credited: 0 });
    await exactlyOnce();
    const thirdText = await cli(
      database.url,
      args(system.baseUrl).filter((a) => a !== '--json'),
    );
    expect(thirdText.code, thirdText.stderr).toBe(3);
    const n = valid.length.toLocaleString('en-US');
    expect(thirdText.stdout).toMatch(
      new RegExp(`^Nothing new credited: .*interrupted\\.csv was already credited to quest \\d+ \\(${n} rows replayed\\)`),
    );
    expect(thirdText.stdout).toMatch(
      new RegExp(`succeeded +${n}: ${n} already credited before \\(replayed\\), 0 newly credited`),
    );
    await exactlyOnce();

    // Another batch size would cut other batches: refused on batch 1, nothing credited twice; the
    // error and the closing hint both name the size to use, and that size then works.
    const otherSize = BATCH_SIZE - 1;
    const other = await cli(database.url, args(system.baseUrl, otherSize));
    expect(other.code, other.stderr).toBe(1);
    expectNoStack(other);
    const out = jsonOf(other);
    expect(out.error).toMatchObject({ code: 'IDEMPOTENCY_KEY_REUSED', batchSize: BATCH_SIZE });
    expect(out).toMatchObject({ batches: 0, succeeded: 0 });
    // Batch 1 holds the first 999 valid rows: CSV lines 2 to 1,001 (line 5 is invalid).
    expect(other.stderr).toMatch(
      new RegExp(
        `^error: batch 1 \\(CSV lines 2–251\\) was refused with 400 IDEMPOTENCY_KEY_REUSED: .* re-run with --batch-size ${BATCH_SIZE} \\(nothing was credited twice\\)$`,
        'm',
      ),
    );
    const otherText = await cli(
      database.url,
      args(system.baseUrl, otherSize).filter((a) => a !== '--json'),
    );
    expect(otherText.code).toBe(1);
    expect(otherText.stdout).toMatch(new RegExp(`\n\nRe-run with --batch-size ${BATCH_SIZE}, `));
    expect(otherText.stdout).not.toMatch(/same --batch-size/);
    await exactlyOnce();
  });

  test('rides out an API restart mid-run: network errors are retried with the same keys, every row credited once', {
    timeout: 120_000,
  }, async ({ system, database, owner, makeQuest, dir }) => {
    const { sql } = database;
    // An API of its own, restarted on the same port.
    const first = await startApiProcess(system.env);
    let api = first.process;
    try {
      const ROW_COUNT = 10_000;
      const BATCH_SIZE = 500;
      const accounts = await createAccounts(sql, ROW_COUNT);
      const rows: Row[] = accounts.map((address) => ({ address, points: '2' }));
      const questId = await makeQuest({ totalPoints: 1_000_000 });
      const file = await writeCsv(dir, 'restart.csv', rows);
      const batches = batchCount(ROW_COUNT, BATCH_SIZE);
      const run = startCli(
        database.url,
        creditArgs({
          quest: questId,
          key: owner.apiKey,
          file,
          baseUrl: first.baseUrl,
          extra: ['--batch-size', String(BATCH_SIZE)],
        }),
      );
      await vi.waitFor(
        async () => {
          expect(run.child.exitCode, run.stderr()).toBeNull();
          expect((await payoutsOf(sql, questId)).n).toBeGreaterThan(0);
        },
        { timeout: 60_000, interval: 10 },
      );
      await api.stop('SIGKILL');
      // The CLI has met the dead API and is backing off: bring it back on the same port.
      const retrying = new RegExp(
        `^warning: batch \\d+ \\(CSV lines [\\d,]+–[\\d,]+\\).*; retry 1 of ${MAX_ATTEMPTS - 1} in`,
        'm',
      );
      await vi.waitFor(() => expect(run.stderr()).toMatch(retrying), { timeout: 30_000, interval: 20 });
      api = await startProcess(
        serviceEntry('api'),
        { ...system.env, PORT: new URL(first.baseUrl).port },
        /Server listening at http:\/\/127\.0\.0\.1:\d+/,
      );
      const result = await run.result;
      expect(result.code, result.stderr).toBe(0);
      expect(jsonOf(result)).toMatchObject({
        batches,
        total: ROW_COUNT,
        succeeded: ROW_COUNT,
        failed: 0,
        failedFile: null,
      });
      expect(await payoutsOf(sql, questId)).toEqual({ n: ROW_COUNT, s: 2 * ROW_COUNT });
      expect(await batchesOf(sql, questId)).toBe(batches);
      expect(await auditViolations(sql)).toEqual([]);
    } finally {
      await api.stop('SIGKILL');
    }
  });

  test('usage errors exit 2 with the error and a hint, and no stack trace', async ({ database, dir }) => {
    const file = await writeCsv(dir, 'usage.csv', [{ address: testAddress(1), points: '1' }]);
    const key = generateApiKey();
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
      [
        ['credit', '--quest', '1', '--key', 'sk_wrongwrongwrong', '--file', file],
        /argument 'sk_wrongwrongwrong' is invalid\. Expected 16 to 128 characters after sk_ \(this has 15\)\./,
      ],
      [['credit', '--quest', '1', '--key', key, '--file', file, '--base-url', 'ftp://x'], /--base-url/],
      [
        ['credit', '--quest', '1', '--key', key, '--file', file, '--concurrency', '0'],
        /--concurrency takes a whole number from 1 to 32/,
      ],
    ];
    const results = await Promise.all(cases.map(([args]) => cli(database.url, [...args, '--json'])));
    for (const [i, result] of results.entries()) {
      expect(result.code, result.stderr).toBe(2);
      // With --json, a usage error is one JSON object on stdout too; the usage text is on stderr.
      expect(jsonOf(result)).toEqual({ error: { code: 'USAGE_ERROR', message: expect.any(String) } });
      expect(result.stderr).toMatch(cases[i]![1]);
      // The error and a one-line hint, not the whole help.
      expect(result.stderr).toMatch(/\n\(run "quest-admin credit --help" for usage\)\n$/);
      expect(result.stderr).not.toMatch(/Usage:/);
      expectNoStack(result);
    }
  });

  test("a wrong key stops with exit 1 and the API's INVALID_API_KEY; a malformed CSV stops at the bad line", {
    timeout: 120_000,
  }, async ({ system, database, owner, quest, accounts, dir }) => {
    const file = await writeCsv(dir, 'wrong-key.csv', [
      { address: testAddress(1), points: '1' },
      { address: testAddress(2), points: '2' },
    ]);
    const wrong = await cli(database.url, creditArgs({ quest, key: generateApiKey(), file, baseUrl: system.baseUrl }));
    expect(wrong.code, wrong.stderr).toBe(1);
    expectNoStack(wrong);
    // One error line (besides progress lines, printed every 2 s on a busy machine).
    const lines = wrong.stderr.trim().split('\n');
    expect(lines.filter((l) => !/^(scanning|crediting)/.test(l))).toEqual([
      expect.stringMatching(/^error: batch 1 \(CSV lines 2–3\) was refused with 401 INVALID_API_KEY: /),
    ]);
    expect(jsonOf(wrong)).toMatchObject({ quest, batches: 0, succeeded: 0, error: { code: 'INVALID_API_KEY' } });
    // The advice is about the key: re-running the same command would be refused again.
    const wrongText = await cli(
      database.url,
      creditArgs({ quest, key: generateApiKey(), file, baseUrl: system.baseUrl }).filter((a) => a !== '--json'),
    );
    expect(wrongText.code).toBe(1);
    expect(wrongText.stdout).toMatch(/\n\nUse an active API key of the owner of quest \d+ \(quest-admin key list\)/);
    expect(wrongText.stdout).not.toMatch(/Re-run the same command/);
    // An unknown quest: no advice to re-run at all.
    const unknownQuest = await cli(
      database.url,
      creditArgs({ quest: 2_000_000_000, key: owner.apiKey, file, baseUrl: system.baseUrl }).filter((a) => a !== '--json'),
    );
    expect(unknownQuest.code).toBe(1);
    expect(unknownQuest.stderr).toMatch(/^error: batch 1 \(CSV lines 2–3\) was refused with 404 QUEST_NOT_FOUND: /m);
    expect(unknownQuest.stdout).not.toMatch(/[Rr]e-?run/);

    const bad = join(dir, 'malformed.csv');
    await writeFile(bad, `address,points\n${testAddress(1)},1\n"${testAddress(2)},2\n`);
    const malformed = await cli(database.url, creditArgs({ quest, key: owner.apiKey, file: bad, baseUrl: system.baseUrl }));
    expect(malformed.code).toBe(1);
    expect(jsonOf(malformed).error.code).toBe('INVALID_CSV');
    expect(await payoutsOf(database.sql, quest)).toEqual({ n: 0, s: 0 });

    // One pass: a malformed line further down stops the run there, after the batch before it was
    // credited (and recorded in the summary), and names the line where the quote opens (5), not
    // the file's last (7).
    const late = join(dir, 'malformed-late.csv');
    await writeFile(
      late,
      `address,points\n${accounts[0]},1\n${accounts[1]},2\n${accounts[2]},3\n"${accounts[3]},4\n${accounts[4]},5\n${accounts[5]},6\n`,
    );
    const partial = await cli(
      database.url,
      creditArgs({ quest, key: owner.apiKey, file: late, baseUrl: system.baseUrl, extra: ['--batch-size', '2'] }),
    );
    expect(partial.code, partial.stderr).toBe(1);
    expectNoStack(partial);
    expect(jsonOf(partial)).toMatchObject({ batches: 1, succeeded: 2, credited: 2, error: { code: 'INVALID_CSV' } });
    expect(jsonOf(partial).error.message).toBe(`${late}: line 5: a quote opened on this line is never closed`);
    expect(await payoutsOf(database.sql, quest)).toEqual({ n: 2, s: 3 });
  });

  test('never waits forever: a batch with no progress is sent again, then the run stops with an error', async ({
    system,
    database,
    owner,
    makeQuest,
    dir,
  }) => {
    const questId = await makeQuest({ totalPoints: 100 });
    const [address] = await createAccounts(database.sql, 1);
    // An API on queues that no worker serves: every batch is accepted (202) and never progresses.
    const prefix = `${system.redis.prefix}-nobody`;
    const stalled = await startApiProcess({ ...system.env, QUEUE_PREFIX: prefix, BATCH_WAIT_MS: '0' });
    try {
      const file = await writeCsv(dir, 'stalled.csv', [{ address: address!, points: '5' }]);
      const extra = ['--stall-timeout', '1', '--stall-tries', '2'];
      const run = await cli(
        database.url,
        creditArgs({ quest: questId, key: owner.apiKey, file, baseUrl: stalled.baseUrl, extra }),
      );
      expect(run.code, run.stderr).toBe(1);
      expectNoStack(run);
      expect(run.stderr).toMatch(/warning: batch 1 \(CSV lines 2–2\): no progress for .*; sending it again \(1 of 1\)/);
      expect(run.stderr).toMatch(/^error: batch 1 \(CSV lines 2–2\): no progress for .*, 2 times; giving up/m);
      expect(jsonOf(run)).toMatchObject({ quest: questId, batches: 0, succeeded: 0, error: { code: 'STALLED' } });
      // Nothing was credited twice: the row is still only accepted (one batch row), not applied.
      expect(await batchesOf(database.sql, questId)).toBe(1);
      expect(await payoutsOf(database.sql, questId)).toEqual({ n: 0, s: 0 });
      // Pointed at the served queues, the same command finishes the same batch, crediting it once.
      const done = await cli(database.url, creditArgs({ quest: questId, key: owner.apiKey, file, baseUrl: system.baseUrl }));
      expect(done.code, done.stderr).toBe(0);
      expect(await payoutsOf(database.sql, questId)).toEqual({ n: 1, s: 5 });
    } finally {
      await stalled.process.stop('SIGKILL');
      const redis = new Redis(system.redis.url);
      await deleteKeysWithPrefix(redis, prefix).finally(() => redis.disconnect());
    }
  });

  test('prints a text summary without --json, and a clean re-run removes a stale failed-rows file', async ({
    system,
    database,
    owner,
    quest,
    accounts,
    dir,
  }) => {
    const rows = [
      { address: accounts[0]!, points: '10' },
      { address: 'oops', points: '1' },
      { address: accounts[1]!, points: '20' },
    ];
    const file = await writeCsv(dir, 'text.csv', rows);
    const args = creditArgs({ quest, key: owner.apiKey, file, baseUrl: system.baseUrl });
    const result = await cli(
      database.url,
      args.filter((a) => a !== '--json'),
    );
    // A row not credited (invalid): exit 3, and the title says so.
    expect(result.code, result.stderr).toBe(3);
    expect(result.stdout).toMatch(/^Credited .*text\.csv to quest \d+, except 1 row \(see .*text\.csv\.failed\.csv\)\n/);
    expect(result.stdout).toMatch(/ {2}succeeded +2 \(newly credited\)\n/);
    expect(result.stdout).toMatch(/ {2}failed +1 \(INVALID_ROW 1\)\n/);
    expect(result.stdout).toMatch(/rows\/s/);
    expect(await failedRowsOf(`${file}.failed.csv`)).toEqual([['3', 'oops', '1', 'INVALID_ROW', BAD_ADDRESS]]);

    await writeFile(file, `address,points\n${accounts[2]},5\n`);
    const clean = await cli(database.url, args);
    expect(clean.code, clean.stderr).toBe(0);
    expect(jsonOf(clean)).toMatchObject({ succeeded: 1, failed: 0, failedFile: null });
    await expect(readFile(`${file}.failed.csv`)).rejects.toThrow(/ENOENT/);
    expect(await payoutsOf(database.sql, quest)).toEqual({ n: 3, s: 35 });

    // A file of invalid rows only: nothing credited, exit 3, and the title says nothing was.
    await writeFile(file, 'address,points\noops,1\n0x12,2\n');
    const bad = await cli(
      database.url,
      args.filter((a) => a !== '--json'),
    );
    expect(bad.code, bad.stderr).toBe(3);
    expect(bad.stdout).toMatch(/^Nothing credited: none of the 2 rows of .*text\.csv could be credited to quest \d+\n/);
    expect(await failedRowsOf(`${file}.failed.csv`)).toEqual([
      ['2', 'oops', '1', 'INVALID_ROW', BAD_ADDRESS],
      ['3', '0x12', '2', 'INVALID_ROW', BAD_ADDRESS],
    ]);
  });

  test('after a first run with the default --batch-size, a re-run with another size is told to drop it, not the size batch 1 had', async ({
    system,
    database,
    owner,
    quest,
    accounts,
    dir,
  }) => {
    // Three rows: the first run's batch 1 holds all three, which is what the service recorded.
    const file = await writeCsv(
      dir,
      'default-size.csv',
      accounts.slice(0, 3).map((address) => ({ address, points: '1' })),
    );
    const args = (extra: string[] = []) => creditArgs({ quest, key: owner.apiKey, file, baseUrl: system.baseUrl, extra });
    const first = await cli(database.url, args());
    expect(first.code, first.stderr).toBe(0);

    const other = await cli(
      database.url,
      args(['--batch-size', '2']).filter((a) => a !== '--json'),
    );
    expect(other.code, other.stderr).toBe(1);
    expectNoStack(other);
    expect(other.stderr).toMatch(
      /^error: batch 1 \(CSV lines 2–3\) was refused with 400 IDEMPOTENCY_KEY_REUSED: .* re-run without --batch-size \(nothing was credited twice\)$/m,
    );
    expect(other.stdout).toMatch(/\n\nRe-run without --batch-size, as .*default-size\.csv was first credited: /);
    expect(`${other.stdout}${other.stderr}`).not.toMatch(/--batch-size 3\b/);
    // As told: the default replays the file, nothing is credited twice.
    const again = await cli(database.url, args());
    expect(again.code, again.stderr).toBe(0);
    expect(jsonOf(again)).toMatchObject({ succeeded: 3, replayed: 3, credited: 0 });
    expect(await payoutsOf(database.sql, quest)).toEqual({ n: 3, s: 3 });
  });
});
