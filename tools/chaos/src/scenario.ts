import type { Cluster, Proc } from './cluster.ts';

/** How hard the clients load the service, and for how long. */
export interface LoadProfile {
  clients: number;
  /** Load before the fault, and after the fault was injected. */
  warmupMs: number;
  afterMs: number;
  creditRows: number;
  /** How long an outage the scenario controls lasts (the webhook receiver down). */
  outageMs: number;
}

/** One fault of the suite: the service it runs on, and how the fault is injected while clients load it. */
export interface Scenario {
  name: string;
  fault: string;
  workers: number;
  redis: 'aof' | 'none';
  /** `pair`: a primary and a synchronous standby of the scenario's own (default: one server). */
  postgres?: 'single' | 'pair';
  firstWorkerEnv?: Record<string, string>;
  /** Extra environment of every process. */
  env?: Record<string, string>;
  /**
   * Subscribe a verifying receiver to every event before the load (answering after `delayMs`), and
   * check afterwards that every event was delivered at least once (webhooks.ts).
   */
  webhooks?: { delayMs?: number };
  /** The quests the clients load (default: all of the cluster's). */
  loadQuests?(c: Cluster): number[];
  /** One client op in this many reverses an earlier answered payout (absent: no reversals). */
  reverseEvery?: number;
  /**
   * The first worker reaches PostgreSQL and Redis through TCP fault proxies (`c.proxies`), and the
   * result reports how well every partition was served through the fault (availability.ts).
   */
  proxied?: boolean;
  /** Run `quest-admin credit` through the fault. */
  credit: boolean;
  /** Inject the fault; `started()` marks the moment it took effect when the fault first waits for one. */
  inject(c: Cluster, started: () => void, profile: LoadProfile): Promise<void>;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Poll `cond` every 20 ms; fail when it is still false after `timeoutMs`. */
export async function waitUntil(cond: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await sleep(20);
  }
}

/** SIGKILL a process of the cluster on purpose (not a crash) and wait until it is gone. */
export async function kill9(p: Proc): Promise<void> {
  p.expectedExit = true;
  p.proc.child.kill('SIGKILL');
  await p.proc.exited;
}

/** Longer than ALLOCATION_WAIT_MS (1 s), shorter than the job lock and the member TTL (3 s). */
const BACKLOG_MS = 1_500;

/**
 * Data loss matters for work Redis holds undecided: pause the workers (SIGSTOP) long enough for the
 * clients' requests to queue up and be answered 202, lose Redis's data, then resume the workers.
 */
export async function withBacklog(c: Cluster, lose: () => Promise<void>): Promise<void> {
  const workers = c.live('worker');
  for (const w of workers) w.proc.child.kill('SIGSTOP');
  try {
    await sleep(BACKLOG_MS);
    await lose();
  } finally {
    for (const w of workers) w.proc.child.kill('SIGCONT');
  }
}
