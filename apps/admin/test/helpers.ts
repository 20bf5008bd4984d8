import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import { findApiKeyWithQuest, type Sql } from '@quest/db';
import { hashApiKey } from '@quest/domain';
import { main } from '../src/main.ts';

export const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));
export const BIN = fileURLToPath(new URL('../bin/quest-admin.js', import.meta.url));

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The environment an invocation sees: built from scratch, so a developer's own DATABASE_URL or API_BASE_URL (or .env file) cannot leak in. */
function cliEnv(env: Record<string, string | undefined>): Record<string, string | undefined> {
  // No developer's .env either, unless a test names one.
  return { PATH: process.env.PATH, HOME: process.env.HOME, ENV_FILE: '/dev/null', ...env };
}

/**
 * Run one CLI invocation in this process: the same `main` that bin/quest-admin.js runs (src/cli.ts only
 * hands it the process's argv, environment, streams and exit code), with its output collected and
 * stderr not a terminal, as when spawned with pipes. Milliseconds instead of a Node start-up per
 * command; the tests that must see the real process (launcher, exit, packaging) use spawnCli.
 */
export async function runCli(args: readonly string[], env: Record<string, string | undefined>): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  const code = await main(
    args,
    cliEnv(env),
    {
      stdout: (text) => {
        stdout += text;
      },
      stderr: (text) => {
        stderr += text;
      },
      interactive: false,
    },
    REPO_ROOT,
  );
  return { code, stdout, stderr };
}

/** Run the real CLI in a child process, as an operator would (bin/quest-admin.js, or `opts.bin`; node flags first). */
export function spawnCli(
  args: readonly string[],
  env: Record<string, string | undefined>,
  opts: { bin?: string; nodeArgs?: readonly string[] } = {},
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...(opts.nodeArgs ?? []), opts.bin ?? BIN, ...args], {
      cwd: REPO_ROOT,
      env: cliEnv(env),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The one JSON object a --json invocation must print: a single line, nothing else on stdout. */
export function jsonOf(result: CliResult): any {
  const lines = result.stdout.split('\n').filter((l) => l !== '');
  expect(lines, `stdout: ${result.stdout}\nstderr: ${result.stderr}`).toHaveLength(1);
  const value = JSON.parse(lines[0]!);
  expect(typeof value).toBe('object');
  expect(Array.isArray(value)).toBe(false);
  return value;
}

/**
 * A usage error: exit 2, the message and a one-line hint on stderr, no stack trace; on stdout nothing, or with
 * --json (`json: true`) exactly one `{"error":{"code":"USAGE_ERROR","message"}}` object.
 */
export function expectUsageError(result: CliResult, mention: string | RegExp, opts: { json?: boolean } = {}): void {
  expect(result.code, result.stderr).toBe(2);
  const pattern = typeof mention === 'string' ? new RegExp(escapeRegExp(mention)) : mention;
  if (opts.json) {
    expect(jsonOf(result)).toEqual({ error: { code: 'USAGE_ERROR', message: expect.stringMatching(pattern) } });
  } else {
    expect(result.stdout).toBe('');
  }
  expect(result.stderr).toMatch(pattern);
  // The error and one line pointing at the help, not the whole help.
  expect(result.stderr).toMatch(/\n\(run "quest-admin [a-z ]*--help" for usage\)\n$/);
  expect(result.stderr).not.toMatch(/Usage:/);
  expect(result.stderr.trimEnd().split('\n'), result.stderr).toHaveLength(2);
  expectNoStack(result);
}

/** A runtime failure: exit 1, one readable line on stderr. */
export function expectFailure(result: CliResult, mention: string | RegExp): void {
  expect(result.code, result.stderr + result.stdout).toBe(1);
  const lines = result.stderr.split('\n').filter((l) => l !== '');
  expect(lines, result.stderr).toHaveLength(1);
  expect(lines[0]).toMatch(/^error: /);
  expect(lines[0]).toMatch(typeof mention === 'string' ? new RegExp(escapeRegExp(mention)) : mention);
  expectNoStack(result);
}

export function expectNoStack(result: CliResult): void {
  expect(result.stderr).not.toMatch(/\n\s+at .+:\d+:\d+/);
  expect(result.stdout).not.toMatch(/\n\s+at .+:\d+:\d+/);
}

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Usage errors need no database, so independent cases run side by side. */
export async function expectUsageErrors(
  run: (...args: string[]) => Promise<CliResult>,
  cases: ReadonlyArray<readonly [readonly string[], string | RegExp]>,
): Promise<void> {
  const results = await Promise.all(cases.map(([args]) => run(...args)));
  for (const [i, result] of results.entries()) {
    const [args, mention] = cases[i]!;
    expectUsageError(result, mention, {
      json: args.slice(0, args.includes('--') ? args.indexOf('--') : undefined).includes('--json'),
    });
  }
}

/**
 * The owner a key authenticates as, the way the API looks keys up (findApiKeyWithQuest), or null
 * for an unknown or revoked key. Quest 0 never exists: only the key half of the answer is read.
 */
export async function activeOwnerOf(sql: Sql, apiKey: string): Promise<string | null> {
  const row = await findApiKeyWithQuest(sql, hashApiKey(apiKey), 0);
  return row && row.revokedAt === null ? row.ownerId : null;
}
