import { describe, expect, it } from 'vitest';
import { runInOrder } from './pipeline.ts';

/** A promise with its resolve/reject exposed. */
function deferred<T = void>() {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

async function* numbers(n: number, failAfter?: Error): AsyncGenerator<number> {
  for (let i = 0; i < n; i++) yield i;
  if (failAfter) throw failAfter;
}

/** Waits for a condition by yielding to the event loop, never for wall-clock time. */
async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 10_000; i++) {
    if (cond()) return;
    await new Promise((r) => setImmediate(r));
  }
  throw new Error(`never happened: ${what}`);
}

/**
 * A fake service whose answers the test releases by hand: `accept[i]` answers batch i's POST,
 * `finish[i]` its results. The log records the order of events.
 */
function fakeService(n: number) {
  const accept = Array.from({ length: n }, () => deferred());
  const finish = Array.from({ length: n }, () => deferred<string>());
  const log: string[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const steps = (concurrency: number) => ({
    concurrency,
    submit: async (i: number) => {
      log.push(`post ${i}`);
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      await accept[i]!.promise;
      log.push(`accepted ${i}`);
      return i;
    },
    follow: async (i: number) => finish[i]!.promise,
    record: async (i: number, r: string) => {
      inFlight--;
      log.push(`record ${i} ${r}`);
    },
  });
  return { accept, finish, log, steps, maxInFlight: () => maxInFlight };
}

describe('runInOrder', () => {
  it('POSTs batch k+1 only after batch k was accepted, keeps `concurrency` accepted batches in flight, records in order', async () => {
    const s = fakeService(6);
    const run = runInOrder(numbers(6), s.steps(3));
    await until(() => s.log.includes('post 0'), 'post 0');
    // Batch 1 waits for batch 0's answer, however long it takes.
    for (let i = 0; i < 50; i++) await new Promise((r) => setImmediate(r));
    expect(s.log).toEqual(['post 0']);
    s.accept[0]!.resolve();
    await until(() => s.log.includes('post 1'), 'post 1');
    expect(s.log).toEqual(['post 0', 'accepted 0', 'post 1']);
    s.accept[1]!.resolve();
    s.accept[2]!.resolve();
    s.accept[3]!.resolve();
    await until(() => s.log.includes('accepted 2'), 'accepted 2');
    // Three accepted, none finished: the window (3) is full, batch 3 is not sent.
    for (let i = 0; i < 50; i++) await new Promise((r) => setImmediate(r));
    expect(s.log).not.toContain('post 3');
    // Later batches finishing first change nothing: results are recorded in batch order.
    s.finish[2]!.resolve('c');
    s.finish[1]!.resolve('b');
    for (let i = 0; i < 50; i++) await new Promise((r) => setImmediate(r));
    expect(s.log.filter((l) => l.startsWith('record'))).toEqual([]);
    s.finish[0]!.resolve('a');
    await until(() => s.log.includes('record 2 c'), 'record 2');
    for (const i of [3, 4, 5]) {
      s.accept[i]!.resolve();
      s.finish[i]!.resolve(String.fromCharCode(97 + i));
    }
    await run;
    expect(s.log.filter((l) => l.startsWith('record'))).toEqual([
      'record 0 a',
      'record 1 b',
      'record 2 c',
      'record 3 d',
      'record 4 e',
      'record 5 f',
    ]);
    // Every POST came after the previous batch's acceptance.
    for (let i = 1; i < 6; i++) expect(s.log.indexOf(`post ${i}`)).toBeGreaterThan(s.log.indexOf(`accepted ${i - 1}`));
    expect(s.maxInFlight()).toBe(3);
  });

  it('with concurrency 1 sends each batch only after the previous one was recorded', async () => {
    const s = fakeService(3);
    for (const d of s.accept) d.resolve();
    const run = runInOrder(numbers(3), s.steps(1));
    await until(() => s.log.includes('accepted 0'), 'accepted 0');
    for (let i = 0; i < 50; i++) await new Promise((r) => setImmediate(r));
    expect(s.log).toEqual(['post 0', 'accepted 0']);
    for (const [i, d] of s.finish.entries()) d.resolve(String(i));
    await run;
    expect(s.log).toEqual([
      'post 0',
      'accepted 0',
      'record 0 0',
      'post 1',
      'accepted 1',
      'record 1 1',
      'post 2',
      'accepted 2',
      'record 2 2',
    ]);
    expect(s.maxInFlight()).toBe(1);
  });

  it('stops sending after a batch fails, and throws that failure once the batches before it are recorded', async () => {
    const s = fakeService(5);
    for (const d of s.accept) d.resolve();
    const run = runInOrder(numbers(5), s.steps(2));
    await until(() => s.log.includes('accepted 1'), 'accepted 1');
    s.finish[0]!.resolve('a');
    s.finish[1]!.reject(new Error('batch 1 refused'));
    await expect(run).rejects.toThrow('batch 1 refused');
    expect(s.log.filter((l) => l.startsWith('record'))).toEqual(['record 0 a']);
    // Batch 2 may have been POSTed while batch 1 was in flight (its slot was free); nothing after it.
    expect(s.log).not.toContain('post 3');
    expect(s.log).not.toContain('post 4');
  });

  it('a failing source (a malformed CSV line) sends nothing more, but lets the batch already sent finish and be recorded first', async () => {
    const s = fakeService(2);
    const run = runInOrder(numbers(2, new Error('INVALID_CSV at line 9')), s.steps(4));
    await until(() => s.log.includes('post 0'), 'post 0');
    let settled = false;
    run.catch(() => {}).finally(() => (settled = true));
    s.accept[0]!.resolve();
    await until(() => s.log.includes('accepted 0'), 'accepted 0');
    for (let i = 0; i < 50; i++) await new Promise((r) => setImmediate(r));
    expect(settled).toBe(false);
    s.finish[0]!.resolve('a');
    await expect(run).rejects.toThrow('INVALID_CSV at line 9');
    expect(s.log).toEqual(['post 0', 'accepted 0', 'record 0 a']);
  });

  it('checks before each submission (an interrupt stops new batches)', async () => {
    const s = fakeService(3);
    for (const d of s.accept) d.resolve();
    for (const [i, d] of s.finish.entries()) d.resolve(String(i));
    let stop = false;
    const run = runInOrder(numbers(3), {
      ...s.steps(1),
      record: async (i: number, r: string) => {
        s.log.push(`record ${i} ${r}`);
        stop = true;
      },
      check: () => {
        if (stop) throw new Error('interrupted');
      },
    });
    await expect(run).rejects.toThrow('interrupted');
    expect(s.log).toEqual(['post 0', 'accepted 0', 'record 0 0']);
  });
});
