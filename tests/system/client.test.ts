import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type AllocateOutcome, type CreditState, createQuestClient, type RetryEvent } from '@quest/client';
import type { Sql } from '@quest/db';
import { generateApiKey } from '@quest/domain';
import {
  auditViolations,
  createAccounts,
  REPO_ROOT,
  type ServiceProcess,
  startApiProcess,
  startSystem,
  systemTest,
  testAddress,
  uniqueName,
} from '@quest/testing';
import { deleteKeysWithPrefix } from '@quest/queue';
import { Redis } from 'ioredis';
import { describe, expect, vi } from 'vitest';
import { startRedis } from '@quest/testing/redis';

/**
 * @quest/client against the real service: API and worker processes on a database and Redis prefix
 * of their own. Each scenario starts the API it needs (answering 202 at once, rate-limiting, on a
 * private Redis that the test restarts), and checks the ledger: every credit applied exactly once.
 */

const test = systemTest({ workers: 1, partitions: 4, env: { JOB_RETENTION_SECONDS: '600' } })
  // biome-ignore lint/correctness/noEmptyPattern: vitest reads a fixture's dependencies from this pattern
  .extend('dir', async ({}, { onCleanup }) => {
    const dir = await mkdtemp(join(tmpdir(), 'quest-client-'));
    onCleanup(() => rm(dir, { recursive: true, force: true }));
    return dir;
  });

interface Seen {
  method: string;
  path: string;
  status: number;
  key: string | null;
  retryAfter: string | null;
  at: number;
}

/** The global fetch, recording every answer (status 0: none) for the test to look at. */
function recordingFetch() {
  const seen: Seen[] = [];
  const fetch = async (request: Request): Promise<Response> => {
    const entry = {
      method: request.method,
      path: new URL(request.url).pathname,
      key: request.headers.get('idempotency-key'),
    };
    try {
      const response = await globalThis.fetch(request);
      seen.push({ ...entry, status: response.status, retryAfter: response.headers.get('retry-after'), at: Date.now() });
      return response;
    } catch (error) {
      seen.push({ ...entry, status: 0, retryAfter: null, at: Date.now() });
      throw error;
    }
  };
  return { fetch, seen };
}

/** `fn` over `items`, `n` at a time; results in item order. */
async function pool<T, R>(items: readonly T[], n: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]!);
      }
    }),
  );
  return out;
}

/** Payouts of a quest: how many, their sum, and whether any account or batch item got two. */
async function ledger(sql: Sql, questId: number) {
  const [row] = await sql<{ n: number; s: string }[]>`
    select count(*)::int as n, coalesce(sum(amount), 0)::text as s from payouts where quest_id = ${questId}`;
  const doubles = await sql`
    select account_id from payouts where quest_id = ${questId} group by account_id having count(*) > 1`;
  return { n: row!.n, sum: Number(row!.s), doubles: doubles.length };
}

interface Run {
  child: ChildProcess;
  result: Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>;
}

/** One of the package's examples as a user runs it: its own process, through tsx. */
function runExample(name: string, args: readonly string[]): Run {
  const child = spawn(process.execPath, ['--import', 'tsx', join('packages/client/examples', name), ...args], {
    cwd: REPO_ROOT,
    env: { PATH: process.env.PATH, HOME: process.env.HOME },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const result = new Promise<Awaited<Run['result']>>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
  return { child, result };
}

describe('@quest/client against the service', () => {
  test("the docs' example credits, replays its order id, and reports a rejection and a refusal", {
    timeout: 120_000,
  }, async ({ system, database, owner, quest }) => {
    // docs/client.md shows the example verbatim.
    const example = await readFile(join(REPO_ROOT, 'packages/client/examples/allocate.ts'), 'utf8');
    expect(await readFile(join(REPO_ROOT, 'docs/client.md'), 'utf8')).toContain(`\`\`\`ts\n${example}\`\`\``);
    expect(example.trimEnd().split('\n').length).toBeLessThanOrEqual(25);

    const [address] = await createAccounts(database.sql, 1);
    const args = (o: { key?: string; to?: string; order?: string } = {}) =>
      [system.baseUrl, o.key ?? owner.apiKey, String(quest), o.to ?? address!, '10', ...(o.order ? [o.order] : [])] as const;
    const first = await runExample('allocate.ts', args({ order: 'order-1' })).result;
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toMatch(new RegExp(`^credited 10 points to ${address}: pay_\\w+\\n$`));
    const again = await runExample('allocate.ts', args({ order: 'order-1' })).result;
    expect(again.stdout).toBe(first.stdout.replace('\n', ' (credited before)\n'));
    const unknown = await runExample('allocate.ts', args({ to: testAddress(0xdead) })).result;
    expect(unknown.code).toBe(0);
    expect(unknown.stdout).toMatch(/^not credited: ACCOUNT_NOT_FOUND \(/);
    const wrongKey = await runExample('allocate.ts', args({ key: generateApiKey() })).result;
    expect(wrongKey.code).toBe(1);
    expect(wrongKey.stderr).toMatch(/^refused: INVALID_API_KEY: /);
    expect(await ledger(database.sql, quest)).toEqual({ n: 1, sum: 10, doubles: 0 });
  });

  test('follows 202s to their decision: payouts, a rejection, and batches paged back', {
    timeout: 180_000,
  }, async ({ system, database, owner, makeQuest }) => {
    // An API on queues no worker serves yet: every POST is answered 202 and stays undecided until
    // the test starts a worker on them, so the client has nothing but following to go on.
    const prefix = `${system.redis.prefix}-later`;
    const api = await startApiProcess({ ...system.env, QUEUE_PREFIX: prefix, ALLOCATION_WAIT_MS: '0', BATCH_WAIT_MS: '0' });
    let later: ServiceProcess | undefined;
    try {
      const questId = await makeQuest({ totalPoints: 100_000 });
      const accounts = await createAccounts(database.sql, 2500);
      const { fetch, seen } = recordingFetch();
      const client = createQuestClient({ baseUrl: api.baseUrl, apiKey: owner.apiKey, fetch });

      const singles = pool(accounts.slice(0, 20), 20, (address) => client.allocate({ questId, address, points: 3 }));
      const refused = client.allocate({ questId, address: testAddress(0xbad), points: 1 });
      const rows = accounts.slice(20).map((address, i) => ({ address, points: 1 + (i % 3), i }));
      const batched = (async () => {
        let credited = 0;
        for await (const batch of client.creditMany(questId, rows, { batchSize: 400, concurrency: 3 })) {
          for (const r of batch.results) {
            expect(r.status, `row ${r.row.i}`).toBe('credited');
            if (r.status === 'credited')
              expect(r.payout).toMatchObject({ amount: r.row.points, account: { pass: r.row.address } });
            credited++;
          }
        }
        return credited;
      })();
      for (const p of [singles, refused, batched]) p.catch(() => {});
      const allocationPolls = () => seen.filter((s) => s.method === 'GET' && s.path.includes('/allocations/'));
      // All 21 credits and 3 batches accepted (202), and their statuses being polled, still undecided.
      await vi.waitFor(
        () => {
          expect(seen.filter((s) => s.method === 'POST' && s.status === 202)).toHaveLength(24);
          expect(new Set(allocationPolls().map((s) => s.path)).size).toBe(21);
        },
        { timeout: 60_000, interval: 20 },
      );
      expect(await ledger(database.sql, questId)).toEqual({ n: 0, sum: 0, doubles: 0 });
      later = await system.startWorker({ QUEUE_PREFIX: prefix });

      const outcomes = await singles;
      expect(outcomes.every((o) => o.kind === 'payout' && o.payout.amount === 3 && !o.replayed)).toBe(true);
      expect(await refused).toMatchObject({ kind: 'rejection', code: 'ACCOUNT_NOT_FOUND', replayed: false });
      expect(await batched).toBe(rows.length);
      // One key per credit (21) and per batch (7), every one accepted with a 202. On a loaded machine
      // the API may answer a POST 503 (Redis slower than its deadline): the client then sends the
      // same key again, so an attempt before the 202 may exist, and only a retryable one.
      const posts = seen.filter((s) => s.method === 'POST');
      const byKey = new Map<string | null, typeof posts>();
      for (const p of posts) byKey.set(p.key, [...(byKey.get(p.key) ?? []), p]);
      expect(byKey.size).toBe(21 + 7);
      expect(new Set(posts.filter((s) => s.path.endsWith(`/quests/${questId}`)).map((s) => s.key)).size).toBe(21);
      for (const [key, attempts] of byKey) {
        expect(attempts.at(-1)!.status, String(key)).toBe(202);
        for (const a of attempts.slice(0, -1)) expect([429, 503], String(key)).toContain(a.status);
      }
      const sum = 20 * 3 + rows.reduce((t, r) => t + r.points, 0);
      expect(await ledger(database.sql, questId)).toEqual({ n: 2500, sum, doubles: 0 });
      expect(await auditViolations(database.sql)).toEqual([]);
    } finally {
      await Promise.all([api.process.stop('SIGKILL'), later?.stop('SIGKILL')]);
      const redis = new Redis(system.redis.url);
      await deleteKeysWithPrefix(redis, prefix).finally(() => redis.disconnect());
    }
  });

  test('rate-limited, it waits out every Retry-After and credits each row once', {
    timeout: 180_000,
  }, async ({ system, database, owner, makeQuest }) => {
    // 8 requests per key and 300 allocation items per owner per second.
    const limited = await startApiProcess({
      ...system.env,
      RATE_LIMIT_WINDOW_MS: '1000',
      RATE_LIMIT_KEY_MAX: '8',
      RATE_LIMIT_OWNER_ITEMS_MAX: '300',
    });
    try {
      const questId = await makeQuest({ totalPoints: 1_000_000 });
      const accounts = await createAccounts(database.sql, 1040);
      const { fetch, seen } = recordingFetch();
      const retries: RetryEvent[] = [];
      const client = createQuestClient({
        baseUrl: limited.baseUrl,
        apiKey: owner.apiKey,
        fetch,
        // Eight clients share eight requests a second: one may be refused many times running.
        retry: { maxAttempts: 50 },
        onRetry: (e) => retries.push(e),
      });
      const outcomes = await pool(accounts.slice(0, 40), 8, (address) => client.allocate({ questId, address, points: 2 }));
      expect(outcomes.every((o) => o.kind === 'payout')).toBe(true);
      let credited = 0;
      for await (const batch of client.creditMany(
        questId,
        accounts.slice(40).map((address) => ({ address, points: 1 })),
        { batchSize: 100, concurrency: 4 },
      )) {
        credited += batch.results.filter((r) => r.status === 'credited').length;
      }
      expect(credited).toBe(1000);

      const limitedAnswers = seen.filter((s) => s.status === 429);
      expect(limitedAnswers.length).toBeGreaterThan(0);
      expect(retries.filter((r) => r.code === 'RATE_LIMITED').length).toBe(limitedAnswers.length);
      // Every retry of a refused credit (same key) came after its Retry-After.
      for (const refused of limitedAnswers.filter((s) => s.method === 'POST')) {
        const next = seen.find((s) => s.key === refused.key && s.method === 'POST' && s.at > refused.at);
        expect(next, `a retry of ${refused.key}`).toBeDefined();
        expect(next!.at - refused.at).toBeGreaterThanOrEqual(Number(refused.retryAfter) * 1000 - 50);
      }
      expect(await ledger(database.sql, questId)).toEqual({ n: 1040, sum: 40 * 2 + 1000, doubles: 0 });
    } finally {
      await limited.process.stop('SIGKILL');
    }
  });

  test('a credit-file.ts process killed with SIGKILL mid-run resumes from its state file and credits nothing twice', {
    timeout: 240_000,
  }, async ({ system, database, owner, makeQuest, dir }) => {
    // At most 2,000 items per owner per second: 10 batches of 1,000 take seconds, so the kill lands mid-run.
    const slow = await startApiProcess({ ...system.env, RATE_LIMIT_WINDOW_MS: '1000', RATE_LIMIT_OWNER_ITEMS_MAX: '2000' });
    try {
      const ROWS = 10_000;
      const questId = await makeQuest({ totalPoints: 1_000_000 });
      const accounts = await createAccounts(database.sql, ROWS);
      const file = join(dir, 'credits.csv');
      await writeFile(file, `address,points\n${accounts.map((a) => `${a},3`).join('\n')}\n`);
      const args = [slow.baseUrl, owner.apiKey, String(questId), file];
      const readState = async () => JSON.parse(await readFile(`${file}.state.json`, 'utf8')) as CreditState;

      const first = runExample('credit-file.ts', args);
      await vi.waitFor(
        async () => {
          expect(first.child.exitCode).toBeNull();
          expect((await readState()).batchesDone).toBeGreaterThanOrEqual(2);
        },
        { timeout: 120_000, interval: 20 },
      );
      first.child.kill('SIGKILL');
      expect((await first.result).signal).toBe('SIGKILL');
      const state = await readState();
      expect(state.rowsDone).toBeLessThan(ROWS);
      // What the service had taken before the kill is decided all the same.
      await vi.waitFor(
        async () =>
          expect(
            await database.sql`select id from batches where quest_id = ${questId} and status in ('pending', 'processing')`,
          ).toEqual([]),
        { timeout: 60_000, interval: 50 },
      );
      const partial = await ledger(database.sql, questId);
      expect(partial.n).toBeGreaterThanOrEqual(state.rowsDone);

      const second = await runExample('credit-file.ts', args).result;
      expect(second.code, second.stderr).toBe(0);
      const done = /^done from line (\d+): (\d+) credited now, (\d+) before, 0 not credited$/m.exec(second.stdout);
      expect(done, second.stdout).not.toBeNull();
      const [from, now, before] = done!.slice(1).map(Number) as [number, number, number];
      // It started after the rows the first process had reported, and met the batches it had sent as replays.
      expect(from).toBe(state.rowsDone + 2);
      expect(now + before).toBe(ROWS - state.rowsDone);
      expect(before).toBeGreaterThanOrEqual(partial.n - state.rowsDone);
      expect(await ledger(database.sql, questId)).toEqual({ n: ROWS, sum: 3 * ROWS, doubles: 0 });
      const batches = await database.sql`select id from batches where quest_id = ${questId}`;
      expect(batches).toHaveLength(ROWS / 1000);
      expect(await auditViolations(database.sql)).toEqual([]);
    } finally {
      await slow.process.stop('SIGKILL');
    }
  });

  test('a 503 storm while its Redis restarts: the keys make every credit exactly once', {
    timeout: 300_000,
  }, async ({ database, owner, makeQuest }) => {
    // A service of its own on a private redis-server (AOF, as deployed), which the test kills and restarts.
    const redis = await startRedis('aof');
    const prefix = uniqueName('qcl');
    const service = await startSystem({
      workers: 1,
      partitions: 4,
      db: database,
      redis: { url: redis.url, prefix, cleanup: async () => {} },
      // Jobs Redis lost in the kill (up to a second of AOF) are re-driven soon.
      env: { RECONCILER_INTERVAL_MS: '500', RECONCILER_MIN_AGE_MS: '2000' },
    });
    try {
      const questId = await makeQuest({ totalPoints: 1_000_000 });
      const accounts = await createAccounts(database.sql, 2200);
      const retries: RetryEvent[] = [];
      const client = createQuestClient({
        baseUrl: service.baseUrl,
        apiKey: owner.apiKey,
        retry: { maxAttempts: 30, maxDelayMs: 1000 },
        onRetry: (e) => retries.push(e),
      });
      const storm = () => retries.filter((r) => r.status === 503).length;

      const singles = pool(accounts.slice(0, 200), 8, (address) =>
        client.allocate({ questId, address, points: 5, deadlineMs: 120_000 }),
      );
      const batched = (async () => {
        const statuses: string[] = [];
        for await (const batch of client.creditMany(
          questId,
          accounts.slice(200).map((address) => ({ address, points: 1 })),
          { batchSize: 100, concurrency: 3 },
        )) {
          statuses.push(...batch.results.map((r) => r.status));
        }
        return statuses;
      })();
      singles.catch(() => {});
      batched.catch(() => {});

      // Once credits flow, kill Redis; bring it back once the client has met the 503s.
      await vi.waitFor(async () => expect((await ledger(database.sql, questId)).n).toBeGreaterThan(50), {
        timeout: 120_000,
        interval: 20,
      });
      await redis.kill9();
      await vi.waitFor(() => expect(storm()).toBeGreaterThanOrEqual(3), { timeout: 60_000, interval: 20 });
      await redis.start();

      const outcomes: AllocateOutcome[] = await singles;
      expect(outcomes.filter((o) => o.kind !== 'payout')).toEqual([]);
      expect(await batched).toEqual(Array(2000).fill('credited'));
      expect(storm()).toBeGreaterThanOrEqual(3);
      expect(await ledger(database.sql, questId)).toEqual({ n: 2200, sum: 200 * 5 + 2000, doubles: 0 });
      const items = await database.sql`
        select 1 from payouts where quest_id = ${questId} group by batch_id, item_index having count(*) > 1 and batch_id is not null`;
      expect(items).toHaveLength(0);
      expect(await auditViolations(database.sql)).toEqual([]);
    } finally {
      await service.stop();
      await redis.stop();
    }
  });
});
