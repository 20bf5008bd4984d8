import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../src/cli.ts';
import { freePort } from '../src/ports.ts';
import { spawnProcess } from '../src/processes.ts';
import { startRedis } from '../src/redis.ts';
import { until } from '../src/wait.ts';

/**
 * The harness the bench, the fault suite and the system tests share, on its own: what each helper
 * promises (ports free, servers and processes stopped, waits bounded, cleanups on exit) without a
 * whole service.
 */

const dir = mkdtempSync(join(tmpdir(), 'quest-harness-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A throwaway script file: `.mjs` runs with plain node, `.ts` through tsx. */
function script(name: string, source: string): string {
  const file = join(dir, name);
  writeFileSync(file, source);
  return file;
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('freePort', () => {
  it('hands out a loopback port that can be bound', async () => {
    const port = await freePort();
    const server = createServer();
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, '127.0.0.1', resolve));
    await new Promise((resolve) => server.close(resolve));
  });
});

describe('until', () => {
  it('returns the first value the probe gives', async () => {
    let n = 0;
    await expect(until('the third try', 5_000, async () => (++n === 3 ? n : undefined), { intervalMs: 1 })).resolves.toBe(3);
  });

  it('times out with what it waited for and the last error', async () => {
    const probe = async () => {
      throw new Error('not yet');
    };
    await expect(until('nothing', 50, probe, { intervalMs: 10 })).rejects.toThrow(
      /timed out waiting for nothing: Error: not yet/,
    );
  });

  it('fails as soon as the process it waits for has exited, not at its deadline', async () => {
    const child = spawn(process.execPath, ['-e', 'process.exit(3)']);
    await new Promise((resolve) => child.once('exit', resolve));
    const forever = 24 * 3_600_000;
    await expect(until('readiness', forever, async () => undefined, { process: { child, name: 'quitter' } })).rejects.toThrow(
      /quitter exited \(3\) before readiness/,
    );
  });
});

describe('startRedis', () => {
  it('runs a redis-server of its own that keeps its data over kill -9 with AOF, and is gone after stop', async () => {
    const server = await startRedis('aof');
    const redis = new Redis(server.url, { maxRetriesPerRequest: 1, lazyConnect: true });
    redis.on('error', () => {});
    const first = server.pid()!;
    try {
      await redis.connect();
      // Redis writes the AOF before it replies; kill -9 loses only what the OS has not been told.
      await redis.set('harness', 'kept');
      await server.kill9();
      expect(alive(first)).toBe(false);
      await server.start();
      expect(server.pid()).not.toBe(first);
      await expect(until('the key back', 10_000, async () => (await redis.get('harness')) ?? undefined)).resolves.toBe('kept');
    } finally {
      redis.disconnect();
      await server.stop();
    }
    expect(server.pid()).toBeUndefined();
  });
});

describe('spawnProcess', () => {
  it('keeps only the tail of the output it was told to, and lists warn/error and non-JSON lines as problems', async () => {
    const entry = script(
      'talk.mjs',
      [
        'console.log(JSON.stringify({ level: 30, msg: "fine" }));',
        'console.log(JSON.stringify({ level: 50, msg: "broken" }));',
        'console.error("not json");',
        'console.log("x".repeat(300));',
      ].join('\n'),
    );
    const proc = spawnProcess(entry, {}, { keepOutput: 100 });
    // 'close', not 'exit': the pipes may still hold output when the process has exited.
    await new Promise((resolve) => proc.child.once('close', resolve));
    // stdout and stderr are two pipes: which line arrives last is not fixed.
    expect(proc.output()).toHaveLength(100);
    expect(proc.output()).toContain(`${'x'.repeat(80)}\n`);
    expect(proc.problems().sort()).toEqual([JSON.stringify({ level: 50, msg: 'broken' }), 'not json', 'x'.repeat(300)].sort());
  });

  it('stop() escalates to SIGKILL when the process ignores the signal', async () => {
    const entry = script('stubborn.mjs', "process.on('SIGTERM', () => {}); console.log('ready'); setInterval(() => {}, 1000);");
    const proc = spawnProcess(entry, {}, { killAfterMs: 200 });
    await until('the handler installed', 10_000, async () => (proc.output().includes('ready') ? true : undefined));
    await expect(proc.stop('SIGTERM')).resolves.toBe(-1);
    expect(proc.child.signalCode).toBe('SIGKILL');
  });
});

describe('runCli', () => {
  it('collects both streams and the exit code, and kills a run that outlives its timeout', async () => {
    const talk = script('cli.mjs', 'console.log("out"); console.error("err"); process.exit(4);');
    const run = await runCli([], { bin: talk, env: {} });
    expect(run).toMatchObject({ code: 4, stdout: 'out\n', stderr: 'err\n', hung: false });
    expect(run.output).toContain('err\n');
    const hang = script('hang.mjs', 'setInterval(() => {}, 1000);');
    const hung = await runCli([], { bin: hang, env: {}, timeoutMs: 200 });
    expect(hung).toMatchObject({ code: null, hung: true });
  });
});

describe('onExitCleanup', () => {
  const exitModule = fileURLToPath(new URL('../src/exit.ts', import.meta.url));
  const program = (name: string, ownHandler: boolean) =>
    script(
      name,
      [
        "import { writeFileSync } from 'node:fs';",
        `import { onExitCleanup } from ${JSON.stringify(exitModule)};`,
        `onExitCleanup(() => writeFileSync(${JSON.stringify(join(dir, `${name}.cleaned`))}, 'yes'));`,
        ownHandler ? "process.on('SIGTERM', () => setTimeout(() => process.exit(7), 50));" : '',
        "console.log('ready');",
        'setInterval(() => {}, 1000);',
      ].join('\n'),
    );

  /** Start the program, SIGTERM it once it runs; its exit code, and whether the cleanup ran. */
  async function terminate(name: string, ownHandler: boolean): Promise<{ code: number | null; cleaned: boolean }> {
    const proc = spawnProcess(program(name, ownHandler), {});
    await until('the program started', 30_000, async () => (proc.output().includes('ready') ? true : undefined), {
      process: proc,
    });
    proc.child.kill('SIGTERM');
    const code = await proc.exited;
    return { code, cleaned: existsSync(join(dir, `${name}.cleaned`)) };
  }

  it('runs on SIGTERM, exiting with 130 when the program has no handler of its own', async () => {
    await expect(terminate('plain.ts', false)).resolves.toEqual({ code: 130, cleaned: true });
  });

  it("leaves the exit to a program's own handler (its teardown is not cut short), and still runs", async () => {
    await expect(terminate('own.ts', true)).resolves.toEqual({ code: 7, cleaned: true });
  });
});
