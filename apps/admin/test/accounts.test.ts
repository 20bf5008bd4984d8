import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getAddress } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '@quest/testing';
import { expectFailure, expectUsageError, jsonOf, runCli } from './helpers.ts';

let db: TestDatabase;
let dir: string;
const cli = (...args: string[]) => runCli(args, { DATABASE_URL: db.url });
const randomHex = () => randomBytes(20).toString('hex');

beforeAll(async () => {
  db = await createTestDatabase();
  dir = await mkdtemp(join(tmpdir(), 'quest-admin-accounts-'));
});
afterAll(async () => {
  await db?.drop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function csvFile(name: string, content: string): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, content);
  return path;
}

async function accountCount(passes: readonly string[]): Promise<number> {
  const [row] = await db.sql<{ n: number }[]>`
    select count(*)::int as n from accounts where pass_address in ${db.sql(passes.map((p) => getAddress(p.toLowerCase())))}`;
  return row!.n;
}

describe('quest-admin account create', () => {
  it('--json creates the account with its EIP-55 pass from lower-case input', async () => {
    const hex = randomHex();
    const result = await cli('account', 'create', '--pass', `0x${hex}`, '--json');
    expect(result.code, result.stderr).toBe(0);
    const out = jsonOf(result);
    expect(out).toEqual({ account: { id: expect.any(Number), pass: getAddress(`0x${hex}`) } });
    const [row] = await db.sql`select pass_address, balance from accounts where id = ${out.account.id}`;
    expect(row).toEqual({ pass_address: getAddress(`0x${hex}`), balance: 0 });
  });

  it('prints text for upper-case input, and refuses the same address again', async () => {
    const hex = randomHex();
    const result = await cli('account', 'create', '--pass', `0x${hex.toUpperCase()}`);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(new RegExp(`^Account created\\n {2}id {4}\\d+\\n {2}pass {2}${getAddress(`0x${hex}`)}\\n$`));
    const again = await cli('account', 'create', '--pass', `0x${hex}`, '--json');
    expectFailure(again, 'already exists');
    expect(jsonOf(again).error.code).toBe('ALREADY_EXISTS');
  });

  it('refuses an invalid address as a usage error', async () => {
    expectUsageError(
      await cli('account', 'create', '--pass', 'hello', '--json'),
      "option '--pass <address>' argument 'hello' is invalid",
      { json: true },
    );
  });
});

describe('quest-admin account import', () => {
  it('--json counts created, skipped and invalid rows and lists the invalid ones by line', async () => {
    const existing = `0x${randomHex()}`;
    expect((await cli('account', 'create', '--pass', existing)).code).toBe(0);
    const fresh = Array.from({ length: 4 }, () => `0x${randomHex()}`);
    // BOM, CRLF, an extra column, quotes, case variants of one address, three invalid rows (a blank
    // line between rows is one: every line after the header is a row).
    const content = [
      '\uFEFFpass,note',
      `${fresh[0]},first`,
      `${existing.toUpperCase().replace('0X', '0x')},already there`,
      'not-an-address,oops',
      '',
      `"${fresh[1]}",quoted`,
      `${fresh[0]!.toUpperCase().replace('0X', '0x')},repeat of line 2`,
      ` ${fresh[2]} ,padded`,
      '0x1234',
      `${fresh[3]}`,
    ].join('\r\n');
    const file = await csvFile('mixed.csv', `${content}\r\n`);
    const result = await cli('account', 'import', '--file', file, '--json');
    expect(result.code, result.stderr).toBe(0);
    expect(jsonOf(result)).toEqual({
      created: 4,
      skipped: 2,
      invalid: 3,
      invalidRows: [
        { line: 4, value: 'not-an-address' },
        { line: 5, value: '' },
        { line: 9, value: '0x1234' },
      ],
    });
    expect(await accountCount(fresh)).toBe(4);
  });

  it('prints a text report, listing invalid rows up to a cap', async () => {
    const good = Array.from({ length: 3 }, () => `0x${randomHex()}`);
    const bad = Array.from({ length: 150 }, (_, i) => `bad-${i}`);
    const file = await csvFile('many-invalid.csv', ['pass', ...good, ...bad].join('\n'));
    const text = await cli('account', 'import', '--file', file);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/created +3\n/);
    expect(text.stdout).toMatch(/skipped \(already existed\) +0\n/);
    expect(text.stdout).toMatch(/invalid +150\n/);
    expect(text.stdout).toContain('line 5: "bad-0"');
    expect(text.stdout).toContain('… and 50 more rows');

    const json = jsonOf(await cli('account', 'import', '--file', file, '--json'));
    expect(json).toMatchObject({ created: 0, skipped: 3, invalid: 150 });
    expect(json.invalidRows).toHaveLength(100);
    expect(json.invalidRows[99]).toEqual({ line: 104, value: 'bad-99' });
  });

  it('imports a file larger than one write chunk: every row created once, and a re-run skips them all', async () => {
    // importAccounts writes 10,000 rows per statement: this file takes three, the last one partial.
    // (How fast 100,000 rows go is measured by `npm run bench -- --scenario admin`.)
    const addresses = Array.from({ length: 25_000 }, () => `0x${randomHex()}`);
    const file = await csvFile('25k.csv', `pass\n${addresses.join('\n')}\n`);
    const result = await cli('account', 'import', '--file', file, '--json');
    expect(result.code, result.stderr).toBe(0);
    expect(jsonOf(result)).toEqual({ created: addresses.length, skipped: 0, invalid: 0, invalidRows: [] });
    expect(await accountCount(addresses)).toBe(addresses.length);

    const again = await cli('account', 'import', '--file', file, '--json');
    expect(again.code, again.stderr).toBe(0);
    expect(jsonOf(again)).toEqual({ created: 0, skipped: addresses.length, invalid: 0, invalidRows: [] });
  });

  it('reports a missing file, a file without a pass (or address) header, and an empty file as errors', async () => {
    const missing = await cli('account', 'import', '--file', join(dir, 'nope.csv'), '--json');
    expectFailure(missing, 'nope.csv');
    expect(jsonOf(missing).error.code).toBe('FILE_NOT_READABLE');

    const header = await cli('account', 'import', '--file', await csvFile('header.csv', `wallet\n0x${randomHex()}\n`));
    expectFailure(header, 'line 1 must be the header naming the column "pass" (or "address")');
    const headless = await cli('account', 'import', '--file', await csvFile('headless.csv', `0x${randomHex()}\n`));
    expectFailure(headless, 'line 1 must be the header');

    const empty = await cli('account', 'import', '--file', await csvFile('empty.csv', ''), '--json');
    expectFailure(empty, 'empty');
    expect(jsonOf(empty).error.code).toBe('INVALID_CSV');

    expectUsageError(await cli('account', 'import'), "required option '--file <path>' not specified");
  });
});
