import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect } from 'vitest';
import type { Sql } from '@quest/db';
import {
  auditViolations,
  createAccounts,
  createOwner,
  post,
  REPO_ROOT,
  randomAddress,
  type System,
  systemTest,
} from '@quest/testing';

/**
 * `quest-admin payouts reverse` end to end: the real CLI process against the real API and worker
 * processes. A re-run reverses nothing twice, rows not reversed land in the failed-rows file with
 * their codes, and the exit codes say which of done / finished with failed rows / stopped / usage.
 */

const BIN = 'apps/admin/bin/quest-admin.js';

const test = systemTest({ workers: 1, partitions: 4 })
  // biome-ignore lint/correctness/noEmptyPattern: vitest reads a fixture's dependencies from this pattern
  .extend('dir', async ({}, { onCleanup }) => {
    const dir = await mkdtemp(join(tmpdir(), 'quest-reverse-'));
    onCleanup(() => rm(dir, { recursive: true, force: true }));
    return dir;
  });

interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

function cli(databaseUrl: string, args: readonly string[]): Promise<CliResult> {
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: REPO_ROOT,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, DATABASE_URL: databaseUrl },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The single JSON object on stdout. */
function jsonOf(result: CliResult): any {
  const lines = result.stdout.split('\n').filter((l) => l !== '');
  expect(lines, `stdout: ${result.stdout}\nstderr: ${result.stderr}`).toHaveLength(1);
  return JSON.parse(lines[0]!);
}

/** Credit through the API; the payout's id. */
async function credit(system: System, apiKey: string, questId: number, address: string, points: number): Promise<string> {
  const res = await post(system, `/quests/${questId}`, { address, points }, { 'x-api-key': apiKey });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.payout.id;
}

async function ledgerOf(sql: Sql, questId: number) {
  const [q] = await sql<{ remaining: number; reversals: number; reversed: number }[]>`
    select q.points_remaining::int as remaining,
           (select count(*)::int from reversals r where r.quest_id = q.id) as reversals,
           (select coalesce(sum(amount), 0)::int from reversals r where r.quest_id = q.id) as reversed
    from quests q where q.id = ${questId}`;
  return q!;
}

async function reversedOf(sql: Sql, payoutIds: readonly string[]): Promise<Map<string, number>> {
  const rows = await sql<{ payout_id: string; s: number }[]>`
    select payout_id, sum(amount)::int as s from reversals where payout_id = any(${payoutIds as string[]}::text[]) group by 1`;
  return new Map(rows.map((r) => [r.payout_id, r.s]));
}

const reverseArgs = (o: { quest: number; key: string; baseUrl: string }, ...extra: string[]) => [
  'payouts',
  'reverse',
  '--quest',
  String(o.quest),
  '--key',
  o.key,
  '--base-url',
  o.baseUrl,
  '--json',
  ...extra,
];

describe('quest-admin payouts reverse', () => {
  test('--file: reverses each row once, a re-run replays everything and takes nothing twice; failed rows listed, exit 3', {
    timeout: 120_000,
  }, async ({ system, database, owner, makeQuest, dir }) => {
    const { sql } = database;
    const questId = await makeQuest({ totalPoints: 100_000 });
    const otherQuest = await makeQuest({ totalPoints: 100_000 });
    const accounts = await createAccounts(sql, 12);
    const whole = await Promise.all(accounts.slice(0, 8).map((a, i) => credit(system, owner.apiKey, questId, a, 10 + i)));
    const partly = await credit(system, owner.apiKey, questId, accounts[8]!, 50);
    const tooMuch = await credit(system, owner.apiKey, questId, accounts[9]!, 5);
    const reversedBefore = await credit(system, owner.apiKey, questId, accounts[10]!, 7);
    const ofOtherQuest = await credit(system, owner.apiKey, otherQuest, accounts[11]!, 9);
    // Reversed whole beforehand by someone else (another key): the run finds nothing left, and counts it done.
    const earlier = await post(
      system,
      `/quests/${questId}/payouts/${reversedBefore}/reversals`,
      {},
      { 'x-api-key': owner.apiKey },
    );
    expect(earlier.status).toBe(200);
    const before = await ledgerOf(sql, questId);

    const unknown = 'pay_01jd8x6m7e9v3q4w5r6t7y8z9a';
    const lines = [
      'payout_id,points',
      ...whole.map((id) => `${id},`),
      `${partly},10`, // line 10
      `${partly},10`, // line 11: a second 10 of the same payout, deliberately
      'pay_not-an-id,', // line 12
      `${unknown},`, // line 13
      `${ofOtherQuest},`, // line 14
      `${tooMuch},6`, // line 15
      `${reversedBefore},`, // line 16
    ];
    const file = join(dir, 'payouts.csv');
    await writeFile(file, `${lines.join('\n')}\n`);
    const args = reverseArgs(
      { quest: questId, key: owner.apiKey, baseUrl: system.baseUrl },
      '--file',
      file,
      '--reason',
      'bot farm',
    );

    const first = await cli(database.url, args);
    expect(first.code, first.stderr).toBe(3);
    const wholeSum = whole.length * 10 + (whole.length * (whole.length - 1)) / 2;
    expect(jsonOf(first)).toEqual({
      quest: questId,
      mode: 'payouts',
      file,
      rows: 15,
      payouts: 14,
      succeeded: 11,
      reversed: 10,
      pointsReversed: wholeSum + 20,
      replayed: 0,
      alreadyReversed: 1,
      failed: 4,
      failedFile: `${file}.failed.csv`,
      elapsedMs: expect.any(Number),
    });
    const failedRows = (await readFile(`${file}.failed.csv`, 'utf8')).trim().split('\n');
    expect(failedRows).toEqual([
      'line,payout_id,points,code',
      '12,pay_not-an-id,,INVALID_ROW',
      `13,${unknown},,PAYOUT_NOT_FOUND`,
      `14,${ofOtherQuest},,PAYOUT_NOT_FOUND`,
      `15,${tooMuch},6,REVERSAL_EXCEEDS_PAYOUT`,
    ]);
    const after = await ledgerOf(sql, questId);
    expect(after).toEqual({
      remaining: before.remaining + wholeSum + 20,
      reversals: before.reversals + 10,
      reversed: before.reversed + wholeSum + 20,
    });
    const reversed = await reversedOf(sql, [...whole, partly, tooMuch, ofOtherQuest]);
    for (const [i, id] of whole.entries()) expect(reversed.get(id), id).toBe(10 + i);
    expect(reversed.get(partly)).toBe(20);
    expect(reversed.has(tooMuch)).toBe(false);
    expect(reversed.has(ofOtherQuest)).toBe(false);
    const [reason] = await sql<{ reason: string }[]>`select reason from reversals where payout_id = ${whole[0]!}`;
    expect(reason!.reason).toBe('bot farm');

    // The same command again: every reversal replayed under its key, nothing taken twice.
    const second = await cli(database.url, args);
    expect(second.code, second.stderr).toBe(3);
    expect(jsonOf(second)).toMatchObject({
      rows: 15,
      payouts: 14,
      reversed: 0,
      pointsReversed: 0,
      replayed: 10,
      alreadyReversed: 1,
      failed: 4,
    });
    expect(await ledgerOf(sql, questId)).toEqual(after);
    expect((await readFile(`${file}.failed.csv`, 'utf8')).trim().split('\n')).toEqual(failedRows);

    // Another reason on a re-run: every row the service decided before is refused IDEMPOTENCY_KEY_REUSED
    // (the key's body changed), never reversed a second time.
    const third = await cli(database.url, [...args.slice(0, -2), '--reason', 'other']);
    expect(third.code, third.stderr).toBe(3);
    expect(jsonOf(third)).toMatchObject({ reversed: 0, succeeded: 0, failed: 15 });
    const codes = (await readFile(`${file}.failed.csv`, 'utf8'))
      .trim()
      .split('\n')
      .slice(1)
      .map((l) => l.split(',').at(-1));
    expect(codes.filter((c) => c === 'IDEMPOTENCY_KEY_REUSED')).toHaveLength(12);
    expect(await ledgerOf(sql, questId)).toEqual(after);
    expect(await auditViolations(sql)).toEqual([]);
  });

  test('--addresses: every payout of each address on the quest, none elsewhere; a re-run replays them; exit 0', {
    timeout: 120_000,
  }, async ({ system, database, owner, makeQuest, dir }) => {
    const { sql } = database;
    const questId = await makeQuest({ totalPoints: 100_000 });
    const otherQuest = await makeQuest({ totalPoints: 100_000 });
    const [bot1, bot2, human] = await createAccounts(sql, 3);
    const botPayouts = [
      await credit(system, owner.apiKey, questId, bot1!, 5),
      await credit(system, owner.apiKey, questId, bot1!, 6),
      await credit(system, owner.apiKey, questId, bot2!, 7),
    ];
    const elsewhere = await credit(system, owner.apiKey, otherQuest, bot1!, 8);
    const kept = await credit(system, owner.apiKey, questId, human!, 9);
    const before = await ledgerOf(sql, questId);
    const file = join(dir, 'bots.csv');
    // Any letter case; an address without an account has no payouts.
    await writeFile(file, `address\n${bot1!.toLowerCase()}\n${bot2}\n${randomAddress()}\n`);
    const args = reverseArgs({ quest: questId, key: owner.apiKey, baseUrl: system.baseUrl }, '--addresses', file);

    const first = await cli(database.url, args);
    expect(first.code, first.stderr).toBe(0);
    expect(jsonOf(first)).toMatchObject({
      mode: 'addresses',
      rows: 3,
      payouts: 3,
      reversed: 3,
      pointsReversed: 18,
      replayed: 0,
      addressesWithoutPayouts: 1,
      failed: 0,
      failedFile: null,
    });
    const reversed = await reversedOf(sql, [...botPayouts, elsewhere, kept]);
    expect([...reversed].sort()).toEqual(
      [
        [botPayouts[0]!, 5],
        [botPayouts[1]!, 6],
        [botPayouts[2]!, 7],
      ].sort(),
    );
    const after = await ledgerOf(sql, questId);
    expect(after.remaining).toBe(before.remaining + 18);

    const second = await cli(database.url, args);
    expect(second.code, second.stderr).toBe(0);
    expect(jsonOf(second)).toMatchObject({ payouts: 3, reversed: 0, replayed: 3, failed: 0 });
    expect(await ledgerOf(sql, questId)).toEqual(after);
    expect(await auditViolations(sql)).toEqual([]);
  });

  test('exit 1 when the key does not own the quest or the file has no payout_id column (nothing reversed), exit 2 without exactly one input', {
    timeout: 60_000,
  }, async ({ system, database, owner, makeQuest, dir }) => {
    const { sql } = database;
    const questId = await makeQuest({ totalPoints: 1000 });
    const [a] = await createAccounts(sql, 1);
    const payout = await credit(system, owner.apiKey, questId, a!, 5);
    const file = join(dir, 'one.csv');
    await writeFile(file, `payout_id\n${payout}\n`);
    const stranger = await createOwner(sql);

    const refused = await cli(
      database.url,
      reverseArgs({ quest: questId, key: stranger.apiKey, baseUrl: system.baseUrl }, '--file', file),
    );
    expect(refused.code, refused.stderr).toBe(1);
    expect(jsonOf(refused)).toMatchObject({ reversed: 0, error: { code: 'NOT_QUEST_OWNER' } });
    expect((await ledgerOf(sql, questId)).reversals).toBe(0);

    const o = { quest: questId, key: owner.apiKey, baseUrl: system.baseUrl };
    // A file without the column: a plain command failure, nothing sent.
    const headerless = join(dir, 'headerless.csv');
    await writeFile(headerless, `id\n${payout}\n`);
    const bad = await cli(database.url, reverseArgs(o, '--file', headerless));
    expect(bad.code, bad.stderr).toBe(1);
    expect(jsonOf(bad)).toMatchObject({ error: { code: 'INVALID_CSV' } });

    for (const extra of [[], ['--file', file, '--addresses', file]]) {
      const usage = await cli(database.url, reverseArgs(o, ...extra));
      expect(usage.code, usage.stderr).toBe(2);
      expect(usage.stderr).toContain('exactly one of --file and --addresses');
    }
    expect((await ledgerOf(sql, questId)).reversals).toBe(0);
  });
});
