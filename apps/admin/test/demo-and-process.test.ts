import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase, testServers, uniqueName } from '@quest/testing';
import {
  activeOwnerOf,
  expectFailure,
  expectNoStack,
  expectUsageErrors,
  jsonOf,
  REPO_ROOT,
  runCli,
  spawnCli,
} from './helpers.ts';

let db: TestDatabase;
const cli = (...args: string[]) => runCli(args, { DATABASE_URL: db.url, API_BASE_URL: 'https://quests.example.test/' });

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

describe('quest-admin demo', () => {
  it('--json creates a usable data set and curl commands against API_BASE_URL', async () => {
    const result = await cli('demo', '--json');
    expect(result.code, result.stderr).toBe(0);
    const out = jsonOf(result);
    expect(out.apiBaseUrl).toBe('https://quests.example.test');
    expect(await activeOwnerOf(db.sql, out.apiKey)).toBe(out.owner.id);

    const [live, second] = out.quests;
    const quests = await db.sql`
      select id, owner_id, campaign_id, is_public, action_status, total_points, points_remaining, start_at, end_at
      from quests where id in ${db.sql([live.id, second.id])} order by id`;
    expect(quests).toHaveLength(2);
    const now = Date.now();
    const first = quests.find((q) => q.id === live.id)!;
    expect(first).toMatchObject({
      owner_id: out.owner.id,
      campaign_id: out.campaign.id,
      is_public: true,
      action_status: 'active',
    });
    expect(first.total_points).toBeGreaterThan(0);
    expect(first.points_remaining).toBe(first.total_points);
    expect(first.start_at.getTime()).toBeLessThanOrEqual(now);
    expect(first.end_at.getTime() - first.start_at.getTime()).toBe(30 * 86_400_000);
    expect(quests.find((q) => q.id === second.id)).toMatchObject({ owner_id: out.owner.id });

    expect(out.accounts).toHaveLength(3);
    const accounts =
      await db.sql`select pass_address from accounts where id in ${db.sql(out.accounts.map((a: { id: number }) => a.id))}`;
    expect(accounts.map((a) => a.pass_address).sort()).toEqual(out.accounts.map((a: { pass: string }) => a.pass).sort());

    expect(out.curl).toEqual({
      listQuests: 'curl -sS https://quests.example.test/quests',
      getQuest: `curl -sS https://quests.example.test/quests/${live.id} -H 'x-api-key: ${out.apiKey}'`,
      getCampaign: `curl -sS https://quests.example.test/campaigns/${out.campaign.id}`,
      allocate: `curl -sS -X POST https://quests.example.test/quests/${live.id} -H 'x-api-key: ${out.apiKey}' -H 'content-type: application/json' -d '{"points":10,"address":"${out.accounts[0].pass}"}'`,
    });
  });

  it('prints the ids and ready-to-paste curl commands as text, and can run again', async () => {
    const result = await cli('demo');
    expect(result.code, result.stderr).toBe(0);
    const key = /API key +(sk_[A-Za-z0-9_-]{43})/.exec(result.stdout)![1]!;
    expect(await activeOwnerOf(db.sql, key)).not.toBeNull();
    const questId = /public quest +(\d+)/.exec(result.stdout)![1];
    expect(result.stdout).toContain('curl -sS https://quests.example.test/quests\n');
    expect(result.stdout).toContain(`curl -sS https://quests.example.test/quests/${questId} -H 'x-api-key: ${key}'`);
    expect(result.stdout).toMatch(
      new RegExp(
        `curl -sS -X POST https://quests.example.test/quests/${questId} .*-d '\\{"points":10,"address":"0x[0-9a-fA-F]{40}"\\}'`,
      ),
    );
    expect(result.stdout).toMatch(/curl -sS https:\/\/quests\.example\.test\/campaigns\/\d+/);
  });
});

describe('quest-admin demo --env', () => {
  it('prints export lines a shell can eval: the data set it made, under the names the docs use', async () => {
    const result = await cli('demo', '--env');
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout.split('\n').filter((l) => l && !l.startsWith('#') && !l.startsWith('export '))).toEqual([]);
    const names = ['BASE', 'KEY', 'OWNER', 'CAMPAIGN', 'QUEST', 'PRIVATE_QUEST', 'ADDRESS', 'ADDRESS2', 'ADDRESS3'];
    const shell = spawnSync(
      'bash',
      ['-c', `eval "$1"; printf '%s\\n' ${names.map((n) => `"$${n}"`).join(' ')}`, '_', result.stdout],
      {
        encoding: 'utf8',
      },
    );
    expect(shell.status, shell.stderr).toBe(0);
    const v = Object.fromEntries(names.map((name, i) => [name, shell.stdout.split('\n')[i]!]));
    expect(v.BASE).toBe('https://quests.example.test');

    const keyHash = createHash('sha256').update(v.KEY!).digest();
    const [key] = await db.sql`select owner_id, revoked_at from api_keys where key_hash = ${keyHash}`;
    expect(key).toEqual({ owner_id: v.OWNER, revoked_at: null });
    const quests = await db.sql`
      select id, owner_id, campaign_id, is_public from quests where id in ${db.sql([Number(v.QUEST), Number(v.PRIVATE_QUEST)])}`;
    expect(
      quests
        .map((q) => ({ ...q, id: String(q.id), campaign_id: String(q.campaign_id) }))
        .sort((a, b) => a.id.localeCompare(b.id)),
    ).toEqual(
      [
        { id: v.QUEST, owner_id: v.OWNER, campaign_id: v.CAMPAIGN, is_public: true },
        { id: v.PRIVATE_QUEST, owner_id: v.OWNER, campaign_id: v.CAMPAIGN, is_public: false },
      ].sort((a, b) => a.id!.localeCompare(b.id!)),
    );
    const accounts =
      await db.sql`select pass_address from accounts where pass_address in ${db.sql([v.ADDRESS!, v.ADDRESS2!, v.ADDRESS3!])}`;
    expect(accounts).toHaveLength(3);
  });

  it('refuses --env with --json (one output form per run)', async () => {
    const result = await cli('demo', '--env', '--json');
    expect(result.code).toBe(2);
    expect(jsonOf(result).error).toEqual({
      code: 'USAGE_ERROR',
      message: '--env prints shell lines; it cannot be combined with --json',
    });
  });
});

describe('quest-admin demo without API_BASE_URL', () => {
  it('follows PORT (and a .env file), and says where the address came from', async () => {
    const json = jsonOf(await runCli(['demo', '--json'], { DATABASE_URL: db.url, PORT: '3917' }));
    expect(json.apiBaseUrl).toBe('http://127.0.0.1:3917');
    expect(json.apiBaseUrlFrom).toBe('HOST/PORT');
    expect(json.curl.listQuests).toBe('curl -sS http://127.0.0.1:3917/quests');
    expect(json.curl.allocate).toMatch(/^curl -sS -X POST http:\/\/127\.0\.0\.1:3917\/quests\/\d+ /);

    // The same from a .env file, as `npm start` and the API would read it; the real environment wins.
    const dir = mkdtempSync(join(tmpdir(), 'quest-admin-env-'));
    try {
      const envFile = join(dir, '.env');
      writeFileSync(envFile, `DATABASE_URL=${db.url}\nPORT=3917\nHOST=0.0.0.0\n`);
      const text = await runCli(['demo'], { ENV_FILE: envFile });
      expect(text.code, text.stderr).toBe(0);
      expect(text.stdout).toContain('Try it against http://127.0.0.1:3917 (API_BASE_URL is unset: built from PORT and HOST');
      expect(text.stdout).toContain('curl -sS http://127.0.0.1:3917/quests\n');
      expect(text.stdout).not.toContain(':3000');

      const explicit = jsonOf(await runCli(['demo', '--json'], { ENV_FILE: envFile, API_BASE_URL: 'http://api:3000' }));
      expect(explicit).toMatchObject({ apiBaseUrl: 'http://api:3000', apiBaseUrlFrom: 'API_BASE_URL' });
      expect(explicit.curl.listQuests).toBe('curl -sS http://api:3000/quests');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('uses the host the API listens on when it is not a wildcard, and 127.0.0.1:3000 with nothing set', async () => {
    const [specific, plain] = await Promise.all([
      runCli(['demo', '--json'], { DATABASE_URL: db.url, HOST: '10.1.2.3', PORT: '8080' }),
      runCli(['demo', '--json'], { DATABASE_URL: db.url }),
    ]);
    expect(jsonOf(specific).apiBaseUrl).toBe('http://10.1.2.3:8080');
    expect(jsonOf(plain).apiBaseUrl).toBe('http://127.0.0.1:3000');
  });
});

describe('the quest-admin process', () => {
  // What a run prints and returns is main()'s, checked in this process; spawnCli runs the real launcher
  // (the linked bin, bin/quest-admin.js → src/cli.ts) where the process is the point: its exit code
  // 0, 1 and 2, and what reaches its stdout and stderr.

  it('answers --help from the linked bin without a database, and exits 0', async () => {
    const result = await spawnCli(
      ['--help'],
      { DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' },
      { bin: join(REPO_ROOT, 'node_modules/.bin/quest-admin') },
    );
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^Usage: quest-admin \[options\] \[command\]/);
    for (const command of [
      'owner',
      'key',
      'account',
      'campaign',
      'quest',
      'features',
      'audit',
      'demo',
      'credit',
      'payouts',
      'status',
    ]) {
      expect(result.stdout).toMatch(new RegExp(`\\n {2}${command} `));
    }
  });

  it('credit --help gives the API address credit would use: PORT from .env, or API_BASE_URL', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'quest-admin-env-'));
    try {
      const envFile = join(dir, '.env');
      writeFileSync(envFile, 'PORT=4123\n');
      const env = { DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none', ENV_FILE: envFile };
      const [fromPort, fromUrl] = await Promise.all([
        runCli(['credit', '--help'], env),
        runCli(['credit', '--help'], { ...env, API_BASE_URL: 'https://rewards.example.test/' }),
      ]);
      const flat = (text: string) => text.replace(/\s+/g, ' ');
      expect(fromPort.code).toBe(0);
      expect(flat(fromPort.stdout)).toContain('--base-url <url> API address (default: http://127.0.0.1:4123, ');
      expect(fromPort.stdout).not.toContain(':3000');
      expect(flat(fromUrl.stdout)).toContain('(default: https://rewards.example.test, from API_BASE_URL)');
      // The exit statuses a script can rely on.
      expect(fromPort.stdout).toMatch(
        /Exit status:\n {2}0 +every row credited.*\n {2}3 +.*failed\.csv.*\n {2}1 +stopped.*\n {2}2 +usage error/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('prints its version (text and JSON), and marks required options in help', async () => {
    const { version } = JSON.parse(readFileSync(join(REPO_ROOT, 'apps/admin/package.json'), 'utf8'));
    const env = { DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' };
    const [text, short, json, help] = await Promise.all([
      spawnCli(['--version'], env),
      runCli(['-V'], env),
      runCli(['--version', '--json'], env),
      runCli(['quest', 'create', '--help'], env),
    ]);
    expect(text).toEqual({ code: 0, stdout: `${version}\n`, stderr: '' });
    expect(short.stdout).toBe(`${version}\n`);
    expect(jsonOf(json)).toEqual({ version });
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/--owner <ownerId> +owner id \(own_…\) \(required\)\n/);
    expect(help.stdout).toMatch(/--campaign <campaignId> +campaign id\n/);
    expect(help.stdout).toMatch(/--total-points <n> +points budget \(required\)\n/);
    expect(help.stdout).toMatch(/--private +leave the quest out of the public list\n/);
  });

  it('answers a usage error with --json as one JSON object on stdout, the error and a hint (or the group usage) on stderr', async () => {
    const results = await Promise.all([
      cli('launch', '--json'),
      cli('owner', 'create', '--json', '--name', 'x'),
      cli('key', '--json'),
    ]);
    expect(results[0]!.stderr).toBe(`error: unknown command 'launch'\n(run "quest-admin --help" for usage)\n`);
    expect(results[1]!.stderr).toBe(
      `error: required option '--pass <address>' not specified\n(run "quest-admin owner create --help" for usage)\n`,
    );
    // A command group without its subcommand lists the subcommands: that is what the operator needs.
    expect(results[2]!.stderr).toMatch(/^Usage: quest-admin key /);
    const messages = results.map((result) => {
      expect(result.code).toBe(2);
      const out = jsonOf(result);
      expect(out.error.code).toBe('USAGE_ERROR');
      return out.error.message;
    });
    expect(messages).toEqual([
      "unknown command 'launch'",
      "required option '--pass <address>' not specified",
      'a subcommand is required; the usage is on stderr (or run with --help)',
    ]);
    // After `--`, --json is an argument, not the option.
    const literal = await cli('features', 'set', '--', '--json');
    expect(literal.code).toBe(2);
    expect(literal.stdout).toBe('');
  });

  it('refuses unknown commands and options with usage on stderr and exit 2', async () => {
    await expectUsageErrors(cli, [
      [['launch'], "unknown command 'launch'"],
      [['owner', 'create', '--name', 'x', '--pass', `0x${'a'.repeat(40)}`, '--colour', 'red'], "unknown option '--colour'"],
      [['audit', 'extra'], 'too many arguments'],
    ]);
    const bare = await spawnCli(['owner'], { DATABASE_URL: db.url });
    expect(bare.code).toBe(2);
    expect(bare.stderr).toMatch(/Usage: quest-admin owner/);
  });

  it('reports bad configuration readably and exits 1', async () => {
    for (const env of [{ DATABASE_URL: 'mysql://db/x' }, { DATABASE_URL: db.url, API_BASE_URL: 'not a url' }]) {
      const result = await runCli(['features', '--json'], env);
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(/^quest-admin: Invalid configuration:\n {2}(DATABASE_URL|API_BASE_URL): /);
      // With --json, the same message as the one JSON object on stdout.
      expect(jsonOf(result)).toEqual({
        error: {
          code: 'INVALID_CONFIGURATION',
          message: expect.stringMatching(/^Invalid configuration:\n {2}(DATABASE_URL|API_BASE_URL): /),
        },
      });
      expectNoStack(result);
      const text = await runCli(['features'], env);
      expect(text.code).toBe(1);
      expect(text.stdout).toBe('');
    }
  });

  it('reports an unreachable database in one line, and as JSON with --json', async () => {
    const env = { DATABASE_URL: 'postgres://postgres@127.0.0.1:1/quest_rewards' };
    const text = await spawnCli(['features'], env);
    expectFailure(text, 'cannot reach PostgreSQL at 127.0.0.1:1/quest_rewards');
    const json = await spawnCli(['audit', '--json'], env);
    expectFailure(json, 'ECONNREFUSED');
    expect(jsonOf(json)).toEqual({ error: { code: 'DATABASE_UNAVAILABLE', message: expect.stringContaining('127.0.0.1:1') } });
  });

  it('creates and migrates a database that does not exist yet', async () => {
    const { postgresUrl } = await testServers();
    const url = new URL(postgresUrl);
    const name = uniqueName('qr_admin_fresh');
    url.pathname = `/${name}`;
    try {
      const result = await runCli(['features', 'set', 'quests=off'], { DATABASE_URL: url.toString() });
      expect(result.code, result.stderr).toBe(0);
      expect(result.stderr).toContain('created database');
      expect(result.stderr).toContain('applied migrations: 00001 init');
      // JSON mode keeps stdout to the one object; the second run has nothing to migrate anyway.
      expect(jsonOf(await runCli(['features', '--json'], { DATABASE_URL: url.toString() }))).toEqual({
        features: { quests: false, campaigns: true },
      });
    } finally {
      const admin = postgres(postgresUrl, { max: 1, onnotice: () => {} });
      await admin.unsafe(`drop database if exists "${name}" with (force)`);
      await admin.end();
    }
  });
});
