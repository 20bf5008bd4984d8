export const SCENARIOS = [
  'latency',
  'throughput',
  'reversals',
  'hot',
  'batch',
  'webhooks',
  'open-loop',
  'scale',
  'memory',
  'api-scale',
  'admin',
] as const;
export type ScenarioName = (typeof SCENARIOS)[number];

export interface BenchConfig {
  quick: boolean;
  workers: number;
  partitions: number;
  connections: number;
  latencyRequests: number;
  throughputS: number;
  hotS: number;
  /** Duration of the single-item limit runs (throughput, hot). */
  limitS: number;
  /** Duration of the coalesced-lists limit runs. */
  coalescedS: number;
  throughputQuests: number;
  /** open-loop: seconds per rate step. */
  openLoopStepS: number;
  accountPool: number;
  /** reversals: payouts reversed during the throughput load (each of a different payout). */
  reversals: number;
  /** reversals: closed-loop clients sending them, beside the load's connections. */
  reversalClients: number;
  batchItems: number;
  batchSize: number;
  batchConcurrency: number;
  chunkSize: number;
  scaleWorkers: number[];
  warmupS: number;
  /** admin: rows of the `quest-admin account import` file (and of the in-process importAccounts limit). */
  importRows: number;
  /** admin: payouts written before `quest-admin audit` is measured. */
  auditPayouts: number;
}

const QUICK_STEP = 3;
const FULL_STEP = 6;

export function benchConfig(quick: boolean, overrides: Partial<BenchConfig> = {}): BenchConfig {
  const base: BenchConfig = quick
    ? {
        quick,
        workers: 2,
        partitions: 16,
        connections: 64,
        latencyRequests: 500,
        throughputS: 5,
        hotS: 5,
        limitS: 5,
        coalescedS: 3,
        throughputQuests: 1000,
        openLoopStepS: QUICK_STEP,
        accountPool: 10_000,
        reversals: 1000,
        reversalClients: 8,
        batchItems: 20_000,
        batchSize: 5_000,
        batchConcurrency: 4,
        chunkSize: 5000, // replaced by the worker's own default (main.ts)
        scaleWorkers: [1, 2],
        warmupS: 1,
        importRows: 100_000,
        auditPayouts: 1_000_000,
      }
    : {
        quick,
        workers: 2,
        partitions: 16,
        connections: 64,
        latencyRequests: 2000,
        throughputS: 20,
        hotS: 20,
        limitS: 20,
        coalescedS: 10,
        throughputQuests: 1000,
        openLoopStepS: FULL_STEP,
        accountPool: 10_000,
        reversals: 1000,
        reversalClients: 8,
        batchItems: 100_000,
        batchSize: 10_000,
        batchConcurrency: 4,
        chunkSize: 5000, // replaced by the worker's own default (main.ts)
        scaleWorkers: [1, 2, 4],
        warmupS: 3,
        importRows: 100_000,
        auditPayouts: 1_000_000,
      };
  return { ...base, ...overrides };
}
