import type { Sql } from '@quest/db';
import type { CreditCheck } from './audit.ts';
import type { BenchConfig, ScenarioName } from './config.ts';
import type { DirectResult } from './direct.ts';
import type { BenchInfra } from './infra.ts';
import type { Window } from './profile.ts';
import type { BenchOwner } from './seed.ts';
import type { Service } from './services.ts';
import type { Row } from './stats.ts';

/**
 * What every scenario gets, also when the service is not running (admin measures the CLI against
 * the database alone): the bench database, logging and the measuring state.
 */
export interface BaseCtx {
  cfg: BenchConfig;
  infra: BenchInfra;
  owner: BenchOwner;
  /** The service's processes now running (none when only service-less scenarios were selected). */
  services(): Service[];
  log(msg: string): void;
  /** Machine-disturbance notes collected by measured(). */
  disturbances: string[];
  /** Measured windows (CLOCK_MONOTONIC µs), to cut CPU profiles down to what was measured. */
  windows: Window[];
  /** Seconds left for waiting on a quiet machine over the whole run (keeps --quick under 2 minutes). */
  quietBudget: { remainingS: number };
}

export interface Ctx extends BaseCtx {
  /** Checksummed addresses of the seeded accounts (≥ max(accountPool, batchItems)). */
  accounts: string[];
  api: Service & { baseUrl: string };
  /**
   * The reference service (reference-server.ts): what a user would write instead — a plain
   * Fastify + postgres.js service running the same ledger transaction inline. Measured under the
   * same load as the service in latency, throughput and hot.
   */
  reference?: Service & { baseUrl: string };
  /**
   * The obvious-queue peer (peer.ts): the design card done the way BullMQ's guide shows it — one
   * job per request, `waitUntilFinished`, one worker at concurrency 1 running the reference's
   * transaction — on a database and Redis prefix of its own. Measured beside the reference.
   */
  peer?: Peer;
  workers(): Service[];
  restartWorkers(n: number): Promise<void>;
  /**
   * A fresh pool of exactly `max` connections for a limit run, all opened before it returns (so
   * connection set-up is not measured, and a server shared with other users' tests cannot refuse
   * connections mid-run); closed again by closeLimitPool(). Opened and closed per run so the
   * bench does not sit on PostgreSQL connections the service needs.
   */
  openLimitPool(max: number): Promise<Sql>;
  closeLimitPool(): Promise<void>;
  /** Measurements shared between scenarios (e.g. the throughput limit reused by scale). */
  shared: { throughputLimit?: DirectResult };
}

export interface ScenarioOutput {
  name: ScenarioName;
  ok: boolean;
  rows: Row[];
  raw: Record<string, unknown>;
  notes: string[];
}

export interface Verdict {
  ok: boolean;
  reasons: string[];
  /** The exact payout check, for scenarios that credit through the service. */
  credits?: CreditCheck;
}

/**
 * The obvious-queue peer as the bench runs it (peer-api.ts, peer-worker.ts): on a database of its
 * own (`<bench database>_peer`, migrated like the bench's, with its own owner and the same
 * numbered accounts) and a Redis key prefix of its own (`<bench prefix>p`), both dropped with the
 * bench's. Its own database keeps the service's background work (outbox, reconciler) away from its
 * rows, and its rows away from the service's checks; the bench checks its ledger separately.
 */
export interface Peer {
  api: Service & { baseUrl: string };
  worker: Service;
  /** A small pool on the peer's database, for seeding its quests and checking its ledger. */
  sql: Sql;
  owner: BenchOwner;
  dbName: string;
}
