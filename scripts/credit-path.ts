/**
 * Which of our own source files one credit (`POST /quests/{questId}` with an Idempotency-Key)
 * passes from the route to the reply, measured rather than read: the API and a worker run from
 * their TypeScript sources with V8's precise coverage; after a warm-up, SIGUSR2 makes each write
 * its counts (which resets them), then N credits run, then an idle window of the same length.
 * A function is on the path when it ran at least once per credit more in the credits' window than
 * in the idle one (timers — heartbeats, metrics, flag refresh — run in both). Prints the files,
 * their lines, and the totals that docs/architecture.md quotes.
 *
 *   npx tsx scripts/credit-path.ts [--credits 40]
 */
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { UNTHROTTLED_RATE_LIMITS } from '@quest/testing/limits';
import { ENTRIES, REPO_ROOT, type ServiceProcess, startProcess } from '@quest/testing/processes';
import { createAccounts, createOwner, createQuest } from '@quest/testing/seed';
import { createTestDatabase, createTestRedis } from '@quest/testing/servers';

interface V8Function {
  functionName: string;
  ranges: { startOffset: number; endOffset: number; count: number }[];
}
interface V8Script {
  url: string;
  functions: V8Function[];
}

const { values } = parseArgs({ options: { credits: { type: 'string', default: '40' } } });
const CREDITS = Number(values.credits);

/** Preloaded into both processes: SIGUSR2 writes the coverage so far (and resets the counts). */
const PRELOAD = `import v8 from 'node:v8';
process.on('SIGUSR2', () => { v8.takeCoverage(); process.stdout.write('coverage-taken\\n'); });\n`;

async function snapshot(procs: ServiceProcess[], n: number): Promise<void> {
  for (const p of procs) p.child.kill('SIGUSR2');
  const deadline = Date.now() + 30_000;
  while (procs.some((p) => p.output().split('coverage-taken').length - 1 < n)) {
    if (Date.now() > deadline) throw new Error('a process did not write its coverage');
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Counts per function (file, name, offset) of one process's nth coverage file. */
function countsOf(dir: string, pid: number, nth: number): Map<string, number> {
  const files = readdirSync(dir)
    .filter((f) => f.startsWith(`coverage-${pid}-`))
    .sort();
  const { result } = JSON.parse(readFileSync(join(dir, files[nth]!), 'utf8')) as { result: V8Script[] };
  const counts = new Map<string, number>();
  for (const script of result) {
    if (!script.url.startsWith('file://') || script.url.includes('/node_modules/')) continue;
    const path = relative(REPO_ROOT, fileURLToPath(script.url));
    if (path.startsWith('..') || !/^(apps|packages)\//.test(path)) continue;
    for (const f of script.functions)
      counts.set(`${path}\u0000${f.functionName}\u0000${f.ranges[0]!.startOffset}`, f.ranges[0]!.count);
  }
  return counts;
}

const lines = (path: string) => readFileSync(join(REPO_ROOT, path), 'utf8').split('\n').length - 1;

async function main(): Promise<void> {
  const coverage = await mkdtemp(join(tmpdir(), 'quest-path-'));
  const preload = join(coverage, 'preload.mjs');
  writeFileSync(preload, PRELOAD);
  const [db, redis] = await Promise.all([createTestDatabase(), createTestRedis()]);
  const env = {
    DATABASE_URL: db.url,
    REDIS_URL: redis.url,
    QUEUE_PREFIX: redis.prefix,
    NODE_V8_COVERAGE: join(coverage, 'v8'),
    ...UNTHROTTLED_RATE_LIMITS,
  };
  const nodeArgs = ['--import', preload];
  const worker = await startProcess(ENTRIES.worker, env, '"worker started"', 60_000, { nodeArgs });
  const api = await startProcess(ENTRIES.api, { ...env, PORT: '0' }, /Server listening at (http:\S+)/, 60_000, { nodeArgs });
  const baseUrl = /Server listening at (http:\/\/[\d.:]+)/.exec(api.output())![1]!;
  try {
    const owner = await createOwner(db.sql);
    const questId = await createQuest(db.sql, { ownerId: owner.id, totalPoints: 1_000_000 });
    const [address] = await createAccounts(db.sql, 1);
    let n = 0;
    const credit = async () => {
      const res = await fetch(`${baseUrl}/quests/${questId}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': owner.apiKey, 'idempotency-key': `path-${n++}` },
        body: JSON.stringify({ points: 1, address }),
      });
      if (res.status !== 200) throw new Error(`credit answered ${res.status}: ${await res.text()}`);
    };
    for (let i = 0; i < 30; i++) await credit();
    await snapshot([api, worker], 1);
    const started = Date.now();
    for (let i = 0; i < CREDITS; i++) await credit();
    const window = Date.now() - started;
    await snapshot([api, worker], 2);
    await new Promise((r) => setTimeout(r, window));
    await snapshot([api, worker], 3);
    report(coverage, [api, worker]);
  } finally {
    await Promise.all([api.stop(), worker.stop()]);
    await db.drop();
    await redis.cleanup();
    rmSync(coverage, { recursive: true, force: true });
  }
}

function report(coverage: string, procs: ServiceProcess[]): void {
  const dir = join(coverage, 'v8');
  const onPath = new Map<string, Set<string>>();
  for (const p of procs) {
    const busy = countsOf(dir, p.pid, 1);
    const idle = countsOf(dir, p.pid, 2);
    for (const [key, count] of busy) {
      if (count - (idle.get(key) ?? 0) < CREDITS) continue;
      const [path, name] = key.split('\u0000') as [string, string];
      onPath.set(path, (onPath.get(path) ?? new Set()).add(name || '(anonymous)'));
    }
  }
  const files = [...onPath.keys()].sort();
  let total = 0;
  for (const f of files) {
    total += lines(f);
    console.log(`${String(lines(f)).padStart(5)}  ${f}  (${[...onPath.get(f)!].slice(0, 6).join(', ')})`);
  }
  console.log(`${files.length} files, ${total} lines`);
}

await main();
