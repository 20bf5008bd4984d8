import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { checkHealthFile, type HealthRecord, removeHealthFile, writeHealthFile } from './health.ts';

let dir: string;
let file: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'quest-health-'));
  file = join(dir, 'worker.health');
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const renewed = Date.parse('2026-11-24T12:00:00.000Z');
const record: HealthRecord = {
  memberId: 'w1',
  pid: 42,
  renewedAt: new Date(renewed).toISOString(),
  memberTtlMs: 3000,
  members: 2,
  partitions: [0, 2],
};

describe('the worker liveness file', () => {
  it('is healthy while the last renewal is younger than the membership TTL, and not after', () => {
    writeHealthFile(file, record);
    expect(readdirSync(dir)).toEqual(['worker.health']); // no temp file left behind
    expect(checkHealthFile(file, renewed + 2999)).toEqual({ healthy: true, ageMs: 2999, record });
    expect(checkHealthFile(file, renewed + 3000)).toMatchObject({ healthy: true, ageMs: 3000 });
    const stale = checkHealthFile(file, renewed + 3001);
    expect(stale).toEqual({
      healthy: false,
      reason: 'pool membership of w1 last renewed 3001 ms ago (limit 3000 ms): the worker is hung or cannot reach Redis',
    });
  });

  it('takes an explicit limit over the recorded TTL, and a renewal in the future as fresh', () => {
    writeHealthFile(file, record);
    expect(checkHealthFile(file, renewed + 5000, 10_000)).toMatchObject({ healthy: true, ageMs: 5000 });
    expect(checkHealthFile(file, renewed + 5000, 1000)).toMatchObject({ healthy: false });
    expect(checkHealthFile(file, renewed - 60_000)).toMatchObject({ healthy: true, ageMs: 0 });
  });

  it('is unhealthy without a file (not joined yet, or left the pool) and with a damaged one', () => {
    expect(checkHealthFile(file, renewed)).toEqual({
      healthy: false,
      reason: `no liveness file at ${file}: the worker has not joined the pool (or has left it)`,
    });
    for (const junk of ['', '{"renewedAt":', '{"memberId":"w1"}', '{"renewedAt":"soon","memberTtlMs":3000}', 'null']) {
      writeFileSync(file, junk);
      expect(checkHealthFile(file, renewed)).toEqual({ healthy: false, reason: `${file} is not a liveness record` });
    }
  });

  it('is removed when the worker leaves the pool (removing twice is harmless)', () => {
    writeHealthFile(file, record);
    removeHealthFile(file);
    removeHealthFile(file);
    expect(checkHealthFile(file, renewed)).toMatchObject({ healthy: false });
  });

  it('is unhealthy while the worker is out of the pool, however fresh, saying why', () => {
    writeHealthFile(file, { ...record, partitions: [], out: 'left the pool: unreachable' });
    expect(checkHealthFile(file, renewed + 10)).toEqual({
      healthy: false,
      reason: 'w1 is out of the pool: left the pool: unreachable',
    });
  });
});
