import { describe, expect, it } from 'vitest';
import { Serial } from './serial.ts';

/** A task whose runs each wait until released, counting starts. */
function gatedTask() {
  const releases: (() => void)[] = [];
  let started = 0;
  const task = () =>
    new Promise<void>((resolve) => {
      started++;
      releases.push(resolve);
    });
  return { task, started: () => started, release: () => releases.shift()?.() };
}

const nextTurn = () => new Promise((r) => setImmediate(r));

describe('Serial', () => {
  it('skips a run asked for while one is under way', async () => {
    const t = gatedTask();
    const serial = new Serial(t.task);
    const first = serial.run();
    await serial.run();
    expect(t.started()).toBe(1);
    t.release();
    await first;
    await nextTurn();
    expect(t.started()).toBe(1);
  });

  it('runs once more after the run under way when asked again, however often', async () => {
    const t = gatedTask();
    const serial = new Serial(t.task);
    const first = serial.run();
    serial.again();
    serial.again();
    expect(t.started()).toBe(1);
    t.release();
    await first;
    await expect.poll(t.started).toBe(2);
    t.release();
    await nextTurn();
    await nextTurn();
    expect(t.started()).toBe(2);
  });

  it('runs at once when asked again while idle', () => {
    const t = gatedTask();
    new Serial(t.task).again();
    expect(t.started()).toBe(1);
  });
});
