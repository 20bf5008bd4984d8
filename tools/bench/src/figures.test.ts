import { describe, expect, it } from 'vitest';
import { cpuPerCredit } from './figures.ts';

describe('cpuPerCredit', () => {
  const cpu = {
    'bench (load generator + limit driver)': 0.7,
    api: 1.5,
    'bench-w1': 1.4,
    'postgres: worker transactions': 2.4,
    'postgres: API queries': 0.1,
    'postgres (shared: WAL, checkpoints)': 0.02,
    'redis-server': 1.0,
    reference: 0.06,
    'postgres: reference queries': 0.01,
    'peer-api': 0.3,
    'peer-worker': 0.25,
    'postgres: peer transactions': 0.09,
    'other processes (not this bench)': 0.7,
  };

  it("counts one side's processes, shared PostgreSQL work on both, never the load generator or other people's", () => {
    // 1,000 credits: CPU-seconds in all = milliseconds per credit.
    expect(cpuPerCredit(cpu, 1000, 'service')).toBeCloseTo(1.5 + 1.4 + 2.4 + 0.1 + 0.02 + 1.0);
    expect(cpuPerCredit(cpu, 1000, 'reference')).toBeCloseTo(0.06 + 0.01 + 0.02);
    // The peer uses the one Redis server too.
    expect(cpuPerCredit(cpu, 1000, 'peer')).toBeCloseTo(0.3 + 0.25 + 0.09 + 0.02 + 1.0);
    expect(cpuPerCredit(cpu, 1000, 'limit')).toBeCloseTo(0.7 + 0.02);
    expect(cpuPerCredit(cpu, 0, 'service')).toBeNull();
  });
});
