import {
  type AttemptRecord,
  type DeliveryEndpoint,
  type DeliveryWork,
  getDeliveryWorks,
  recordAttempts,
  type Sql,
  type StoredEvent,
} from '@quest/db';
import { decryptSecret, eventView, type RetrySchedule, retryDelayMs, withinRetryWindow } from '@quest/domain';
import type { DeliveryGroupJob } from '@quest/queue';
import { Webhook } from 'standardwebhooks';
import { deliveries, deliveryLagSeconds } from '../metrics.ts';
import { type SendOptions, sendWebhook } from './send.ts';

/** The first KiB of an answer is kept in the delivery log. */
export const LOGGED_BODY_BYTES = 1024;

export interface DeliverDeps {
  sql: Sql;
  secretKey: Buffer | null;
  schedule: RetrySchedule;
  send: SendOptions;
  logger: { info(obj: object, msg?: string): void; warn(obj: object, msg?: string): void };
  /** POSTs of one job in flight at once. */
  concurrency: number;
  /** POSTs in flight at once over every job of the process (WEBHOOK_CONCURRENCY); none: only `concurrency`. */
  limiter?: Limiter;
  /** Endpoints' decrypted signers, kept across jobs (none: decrypted once per job). */
  signers?: SignerCache;
  random?: () => number;
}

/** What one job did (for tests and logs). */
export interface GroupResult {
  /** Deliveries of the job read from PostgreSQL. */
  read: number;
  /** Deliveries the job still carried (pending, at the job's attempt, handed over in this job). */
  carried: number;
  /** POSTs made. */
  sent: number;
  /** Outcomes written (the attempt check refused the others: another copy of the job was first). */
  recorded: number;
  /** Deliveries failed unattempted: their endpoint was deleted, or their event is gone. */
  dropped: number;
}

/** A counting semaphore: at most `size` holders at once, the others wait in order. */
export class Limiter {
  private active = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly size: number) {}

  async run<T>(f: () => Promise<T>): Promise<T> {
    if (this.active >= this.size) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.active++;
    try {
      return await f();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.active--;
    }
  }
}

interface Signers {
  currentEnc: Uint8Array;
  current: Webhook;
  previousEnc: Uint8Array | null;
  previous: Webhook | null;
}

const sameBytes = (a: Uint8Array | null, b: Uint8Array | null) =>
  a === b || (a !== null && b !== null && Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(b));

/**
 * Endpoints' signing secrets, decrypted (AES-GCM) and turned into `Webhook` signers once, kept by
 * endpoint id and checked against the stored ciphertexts on every use: a rotation stores new
 * ciphertexts, so the next job decrypts again. At most `max` endpoints (then it starts afresh).
 */
export class SignerCache {
  private readonly byEndpoint = new Map<string, Signers>();
  decrypted = 0;

  constructor(private readonly max = 1024) {}

  get(endpoint: DeliveryEndpoint, key: Buffer): Signers {
    const hit = this.byEndpoint.get(endpoint.id);
    if (hit && sameBytes(hit.currentEnc, endpoint.secretEnc) && sameBytes(hit.previousEnc, endpoint.previousSecretEnc)) {
      return hit;
    }
    const decrypt = (enc: Uint8Array) => {
      this.decrypted++;
      return new Webhook(decryptSecret(enc, key, endpoint.id));
    };
    const made: Signers = {
      currentEnc: endpoint.secretEnc,
      current: decrypt(endpoint.secretEnc),
      previousEnc: endpoint.previousSecretEnc,
      previous: endpoint.previousSecretEnc ? decrypt(endpoint.previousSecretEnc) : null,
    };
    if (this.byEndpoint.size >= this.max) this.byEndpoint.clear();
    this.byEndpoint.set(endpoint.id, made);
    return made;
  }
}

/**
 * The signature header of a delivery: `v1,<base64 HMAC-SHA256>` per Standard Webhooks, signed by
 * the reference library; during a rotation, the previous secret's signature follows the new one's,
 * space-separated, so a receiver holding either secret verifies.
 */
export function signatureHeader(signers: readonly Webhook[], msgId: string, at: Date, body: string): string {
  return signers.map((s) => s.sign(msgId, at, body)).join(' ');
}

/** Whether this job carries the delivery's current attempt (see claimDueDeliveries). */
function carries(work: DeliveryWork, job: DeliveryGroupJob, attempt: number): boolean {
  return work.status === 'pending' && work.attempts === attempt - 1 && work.jobId === job.jobId;
}

/** The record of a delivery failed unattempted: its endpoint was deleted, or its event is gone. */
function droppedRecord(work: DeliveryWork, attempt: number): AttemptRecord {
  const error = work.endpoint.deleted ? 'endpoint deleted' : 'event deleted past retention';
  return {
    id: work.id,
    attempt,
    at: new Date(),
    outcome: 'dropped',
    responseStatus: null,
    responseBody: null,
    latencyMs: null,
    error,
  };
}

/**
 * One attempt of each delivery of a group: read them all (one query), sign each event (each
 * endpoint's secrets decrypted once), POST each — one event per POST, `concurrency` at a time —
 * and write every outcome back in one statement (delivered; retry at the next time of the
 * schedule; or, past the retry window, failed and the endpoint failing). A delivery the job no
 * longer carries — recorded already (a duplicate job), or handed over again to another job (a
 * stale one) — is not sent; the attempt check in recordAttempts refuses any record that still
 * comes second. A deleted endpoint's deliveries, and any whose event is gone, are dropped (failed,
 * unattempted).
 */
export async function deliverGroup(deps: DeliverDeps, job: DeliveryGroupJob): Promise<GroupResult> {
  const { sql } = deps;
  const attemptOf = new Map(job.deliveries.map((d) => [d.id, d.attempt]));
  const works = await getDeliveryWorks(
    sql,
    job.deliveries.map((d) => d.id),
  );
  const carried = works.filter((w) => carries(w, job, attemptOf.get(w.id)!));
  const dropped = carried.filter((w) => w.endpoint.deleted || w.event === null);
  const records: AttemptRecord[] = dropped.map((w) => droppedRecord(w, attemptOf.get(w.id)!));
  const toSend = carried.filter((w): w is DeliveryWork & { event: StoredEvent } => !w.endpoint.deleted && w.event !== null);
  if (toSend.length > 0 && !deps.secretKey) {
    await recordAttempts(sql, records);
    // Nothing can be signed: leave it to be retried once the operator sets the key.
    throw new Error('WEBHOOK_SECRET_KEY is unset: cannot sign deliveries');
  }
  const signers = deps.signers ?? new SignerCache();
  const lagOf = new Map<number, number>();
  let sent = 0;
  const failed: { deliveryId: number; endpointId: string; attempts: number }[] = [];
  const attemptOne = async (work: DeliveryWork & { event: StoredEvent }): Promise<void> => {
    const attempt = attemptOf.get(work.id)!;
    let signing: Signers;
    try {
      signing = signers.get(work.endpoint, deps.secretKey!);
    } catch (err) {
      // Left unrecorded: the reconciler hands it over again (a wrong key, a damaged row).
      deps.logger.warn({ err, deliveryId: work.id, endpointId: work.endpoint.id }, 'cannot decrypt the signing secret');
      return;
    }
    const now = new Date();
    const active = [signing.current];
    if (signing.previous && work.endpoint.previousSecretExpiresAt && work.endpoint.previousSecretExpiresAt > now) {
      active.push(signing.previous);
    }
    const body = JSON.stringify(eventView(work.event));
    const headers = {
      'webhook-id': work.event.id,
      'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
      'webhook-signature': signatureHeader(active, work.event.id, now, body),
      'user-agent': 'quest-rewards-webhooks/1',
    };
    sent++;
    const result = await sendWebhook(work.endpoint.url, headers, body, deps.send);
    const at = new Date();
    const ok = result.status !== null && result.status >= 200 && result.status < 300;
    const first = work.firstAttemptAt ?? now;
    const outcome = ok ? 'delivered' : withinRetryWindow(first, at, deps.schedule) ? 'retry' : 'failed';
    records.push({
      id: work.id,
      attempt,
      at,
      outcome,
      ...(outcome === 'retry'
        ? { nextAttemptAt: new Date(at.getTime() + retryDelayMs(attempt, deps.schedule, (deps.random ?? Math.random)())) }
        : {}),
      responseStatus: result.status,
      responseBody: Buffer.from(result.body).subarray(0, LOGGED_BODY_BYTES).toString('utf8'),
      latencyMs: result.latencyMs,
      error: result.error ?? (ok ? null : `HTTP ${result.status}`),
    });
    if (ok) lagOf.set(work.id, (at.getTime() - work.event.createdAt.getTime()) / 1000);
    if (outcome === 'failed') failed.push({ deliveryId: work.id, endpointId: work.endpoint.id, attempts: attempt });
  };
  let next = 0;
  const lane = async () => {
    while (next < toSend.length) {
      const work = toSend[next++]!;
      await (deps.limiter ? deps.limiter.run(() => attemptOne(work)) : attemptOne(work));
    }
  };
  await Promise.all(Array.from({ length: Math.min(Math.max(1, deps.concurrency), toSend.length) }, lane));
  const recorded = await recordAttempts(sql, records);
  for (const r of records) {
    if (!recorded.has(r.id) || r.outcome === 'dropped') continue;
    deliveries.inc({ outcome: r.outcome === 'failed' ? 'gave_up' : r.outcome });
    const lag = lagOf.get(r.id);
    if (lag !== undefined) deliveryLagSeconds.observe(lag);
  }
  for (const f of failed) {
    if (recorded.has(f.deliveryId)) deps.logger.warn(f, 'delivery given up; endpoint failing');
  }
  return { read: works.length, carried: carried.length, sent, recorded: recorded.size, dropped: dropped.length };
}
