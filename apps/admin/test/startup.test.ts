import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '@quest/testing';
import { spawnCli } from './helpers.ts';

/**
 * Every quest-admin call pays for what it loads before it answers. Each command imports its module
 * when it runs (program.ts) and the bundle is split there (scripts/build.mjs), so the packages that
 * take seconds to load here — viem, BullMQ and ioredis, postgres.js — load only for the commands
 * that use them. Checked on the real process (the launcher: the suite's fresh bundle), by the
 * names of the packages it resolves.
 */
const RECORDER = new URL('./record-packages.mjs', import.meta.url).href;
const HEAVY = ['viem', 'bullmq', 'ioredis', 'postgres'];

let dir: string;
let db: TestDatabase;
let runs = 0;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'quest-admin-startup-'));
  db = await createTestDatabase();
});
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await db?.drop();
});

/** Run quest-admin; its exit code and the packages it loaded. */
async function loaded(args: string[], env: Record<string, string> = {}) {
  const file = join(dir, `run-${++runs}.txt`);
  const result = await spawnCli(args, { ...env, RECORD_PACKAGES: file }, { nodeArgs: ['--import', RECORDER] });
  let names: string[] = [];
  try {
    names = readFileSync(file, 'utf8').split('\n').filter(Boolean);
  } catch {}
  return { ...result, packages: names };
}

describe('quest-admin loads only what the command needs', () => {
  it('--version, --help, a group help and usage errors load none of viem, BullMQ, ioredis, postgres.js', async () => {
    const runs = await Promise.all([
      loaded(['--version']),
      loaded(['--help']),
      loaded(['owner', 'list', '--help']),
      loaded(['credit', '--help']),
      loaded(['owner', 'create', '--name', 'x', '--pass', '0x12']),
      loaded(['no-such-command']),
    ]);
    expect(runs.map((r) => r.code)).toEqual([0, 0, 0, 0, 2, 2]);
    // The recorder saw the process (commander is loaded by every run).
    for (const run of runs) expect(run.packages).toContain('commander');
    for (const run of runs) expect(run.packages.filter((p) => HEAVY.includes(p))).toEqual([]);
  });

  it('a database command loads postgres.js, not viem, BullMQ nor ioredis', async () => {
    const run = await loaded(['owner', 'create', '--name', 'startup', '--pass', `0x${'ab'.repeat(20)}`, '--json'], {
      DATABASE_URL: db.url,
    });
    expect(run.code, run.stderr).toBe(0);
    expect(run.packages).toContain('postgres');
    // The pass address's checksum is a Keccak-256 of @noble/hashes, not viem's.
    expect(run.packages).toContain('@noble/hashes');
    expect(run.packages).not.toContain('viem');
    expect(run.packages).not.toContain('bullmq');
    expect(run.packages).not.toContain('ioredis');
  });
});
