import { spawn } from 'node:child_process';
import { accessSync, chmodSync, constants, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { REPO_ROOT, systemTest } from '@quest/testing';
import { afterAll, beforeAll, expect } from 'vitest';
import { codeBlocks, PAGES } from './markdown.ts';

/**
 * "Every command the docs show runs as printed": each `sh` block of README.md and docs/ runs with
 * bash, as a reader would paste it, against this file's own API, worker, database and Redis prefix,
 * after `quest-admin demo --env` has set the variables the docs use (a block that runs the demo
 * itself gets nothing else). A block must exit 0, and its curl commands must answer the statuses
 * its `# → 200` comments promise, in order. `curl` is a wrapper that has the real curl report each
 * status on stderr, so the commands' own output stays as printed. Blocks fenced `shell` are not
 * run; tests/docs/pages.test.ts makes each say why.
 */

const ADMIN_TOKEN = `docs-test-${randomBytes(12).toString('hex')}`;
// The docs promise a 200 for a credit decided within ALLOCATION_WAIT_MS (5 s); a shared CI machine
// can be slower than that, and then the service rightly answers 202. A longer wait keeps the
// promise about the commands, not about this machine's speed.
// Webhooks need a key to encrypt their secrets with; the docs' receivers listen on 127.0.0.1.
const WEBHOOK_ENV = { WEBHOOK_SECRET_KEY: randomBytes(32).toString('hex'), WEBHOOK_ALLOW_PRIVATE_URLS: 'true' };
const test = systemTest({ workers: 1, partitions: 2, env: { ADMIN_TOKEN, ALLOCATION_WAIT_MS: '30000', ...WEBHOOK_ENV } });

const RUNNABLE = PAGES.flatMap(codeBlocks).filter((b) => b.lang === 'sh');
const SETS_ITS_OWN_VARIABLES = /quest-admin demo --env/;

/** The statuses a block's comments promise, in order: `# → 200`, `# → 200, 200`, `# → 400: CODE`. */
function promisedStatuses(body: string): number[] {
  return [...body.matchAll(/#\s*→\s*(\d{3}(?:\s*,\s*\d{3})*)/g)].flatMap((m) => m[1]!.split(',').map((s) => Number(s.trim())));
}

function findOnPath(name: string): string {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    try {
      accessSync(join(dir, name), constants.X_OK);
      return join(dir, name);
    } catch {}
  }
  throw new Error(`${name} is not on PATH`);
}

/** The names the blocks run through npx (`npx quest-admin …`, `npx tsx …`). */
const NPX_NAMES = [...new Set(RUNNABLE.flatMap((b) => [...b.body.matchAll(/\bnpx\s+([a-z][\w.-]*)/g)].map((m) => m[1]!)))];
const LOCAL_BINS = join(REPO_ROOT, 'node_modules', '.bin');

let bin: string;
let realNpx: string;
beforeAll(() => {
  bin = mkdtempSync(join(tmpdir(), 'quest-docs-bin-'));
  const install = (name: string, script: string) => {
    writeFileSync(join(bin, name), script);
    chmodSync(join(bin, name), 0o755);
  };
  install('curl', `#!/bin/sh\nexec '${findOnPath('curl')}' --write-out '%{stderr}HTTP %{http_code} %{url_effective}\\n' "$@"\n`);
  // `npx NAME …` for a bin of this repository runs node_modules/.bin/NAME, which is what npx itself
  // runs for it (the test below checks that npx resolves every name the blocks use to that file),
  // without npx's own start-up: about 0.5 s a call here, and the blocks make about 20. Anything
  // else goes to the real npx.
  realNpx = findOnPath('npx');
  install(
    'npx',
    `#!/bin/sh\ncase "$1" in\n  -*|'') ;;\n  *) if [ -x '${LOCAL_BINS}'/"$1" ]; then n="$1"; shift; exec '${LOCAL_BINS}'/"$n" "$@"; fi ;;\nesac\nexec '${realNpx}' "$@"\n`,
  );
});
afterAll(() => rmSync(bin, { recursive: true, force: true }));

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function bash(script: string, env: Record<string, string>): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-e', '-o', 'pipefail', '-c', script], {
      cwd: REPO_ROOT,
      env,
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

let demoExports: Promise<string> | undefined;

test.for(RUNNABLE.map((block) => ({ ...block, where: `${block.page}:${block.line}` })))(
  'runs the sh block at $where as printed',
  { timeout: 180_000 },
  async (block, { system }) => {
    // A clean environment: only what a reader's shell would have, pointed at this file's service.
    const env: Record<string, string> = {
      PATH: [bin, dirname(process.execPath), process.env.PATH].join(delimiter),
      HOME: process.env.HOME ?? tmpdir(),
      ENV_FILE: '/dev/null',
      DATABASE_URL: system.db.url,
      REDIS_URL: system.redis.url,
      QUEUE_PREFIX: system.redis.prefix,
      QUEUE_PARTITIONS: system.env.QUEUE_PARTITIONS!,
      API_BASE_URL: system.baseUrl,
      ADMIN_TOKEN,
    };
    demoExports ??= bash('npx quest-admin demo --env', env).then((r) => {
      if (r.code !== 0) throw new Error(`quest-admin demo --env failed:\n${r.stderr}`);
      return r.stdout;
    });
    const prelude = SETS_ITS_OWN_VARIABLES.test(block.body) ? '' : `${await demoExports}\n`;
    const result = await bash(prelude + block.body, env);
    const report = `${block.page}:${block.line}\n--- stdout\n${result.stdout.slice(-3000)}\n--- stderr\n${result.stderr.slice(-3000)}`;
    expect(result.code, report).toBe(0);
    const answered = [...result.stderr.matchAll(/^HTTP (\d{3}) (.*)$/gm)];
    expect(
      answered.map((m) => `${m[1]} ${m[2]}`),
      report,
    ).toEqual(promisedStatuses(block.body).map((status, i) => `${status} ${answered[i]?.[2] ?? '(no request)'}`));
  },
);

test('npx runs, for each name the blocks give it, the bin the npx of the test runs directly', async () => {
  expect(NPX_NAMES).toContain('quest-admin');
  const { stdout, code } = await new Promise<{ stdout: string; code: number | null }>((resolve, reject) => {
    const child = spawn(realNpx, ['--no-install', '-c', 'for n in $NAMES; do command -v "$n"; done'], {
      cwd: REPO_ROOT,
      env: { ...process.env, NAMES: NPX_NAMES.join(' ') },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.on('error', reject);
    child.on('close', (c) => resolve({ stdout: out, code: c }));
  });
  expect(code).toBe(0);
  expect(stdout.trim().split('\n')).toEqual(NPX_NAMES.map((n) => join(LOCAL_BINS, n)));
});

test('finds the runnable blocks: the quickstart and every operation of the API among them', () => {
  const pages = new Set(RUNNABLE.map((b) => b.page));
  expect(pages).toContain('README.md');
  expect(pages).toContain('docs/api.md');
  expect(pages).toContain('docs/operations.md');
  const curls = RUNNABLE.reduce((n, b) => n + (b.body.match(/\bcurl\b/g)?.length ?? 0), 0);
  expect(RUNNABLE.reduce((n, b) => n + promisedStatuses(b.body).length, 0)).toBe(curls);
});
