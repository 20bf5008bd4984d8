import { dropDelivery, getDeliveryWork, recordAttempt, type Sql } from '@quest/db';
import { decryptSecret, eventView, type RetrySchedule, retryDelayMs, withinRetryWindow } from '@quest/domain';
import type { DeliveryJob } from '@quest/queue';
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
  random?: () => number;
}

/**
 * The signature header of a delivery: `v1,<base64 HMAC-SHA256>` per Standard Webhooks, signed by
 * the reference library; during a rotation, the previous secret's signature follows the new one's,
 * space-separated, so a receiver holding either secret verifies.
 */
export function signatureHeader(secrets: readonly string[], msgId: string, at: Date, body: string): string {
  return secrets.map((s) => new Webhook(s).sign(msgId, at, body)).join(' ');
}

/**
 * One attempt of one delivery: read it, sign its event, POST it, and write the outcome back
 * (delivered; retry at the next time of the schedule; or, past the retry window, failed and the
 * endpoint failing). A job for an attempt already recorded (a duplicate) does nothing.
 */
export async function deliver(deps: DeliverDeps, job: DeliveryJob): Promise<void> {
  const { sql } = deps;
  const work = await getDeliveryWork(sql, job.deliveryId);
  if (work?.status !== 'pending' || work.attempts !== job.attempt - 1) return;
  if (work.endpoint.deleted) {
    await dropDelivery(sql, work.id, 'endpoint deleted');
    return;
  }
  if (!deps.secretKey) {
    // Nothing can be signed: leave it to be retried once the operator sets the key.
    throw new Error('WEBHOOK_SECRET_KEY is unset: cannot sign deliveries');
  }
  const now = new Date();
  const secrets = [decryptSecret(work.endpoint.secretEnc, deps.secretKey, work.endpoint.id)];
  if (work.endpoint.previousSecretEnc && work.endpoint.previousSecretExpiresAt && work.endpoint.previousSecretExpiresAt > now) {
    secrets.push(decryptSecret(work.endpoint.previousSecretEnc, deps.secretKey, work.endpoint.id));
  }
  const body = JSON.stringify(eventView(work.event));
  const headers = {
    'webhook-id': work.event.id,
    'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
    'webhook-signature': signatureHeader(secrets, work.event.id, now, body),
    'user-agent': 'quest-rewards-webhooks/1',
  };
  const result = await sendWebhook(work.endpoint.url, headers, body, deps.send);
  const at = new Date();
  const ok = result.status !== null && result.status >= 200 && result.status < 300;
  const first = work.firstAttemptAt ?? now;
  const outcome = ok ? 'delivered' : withinRetryWindow(first, at, deps.schedule) ? 'retry' : 'failed';
  const recorded = await recordAttempt(sql, {
    id: work.id,
    attempt: job.attempt,
    at,
    outcome,
    ...(outcome === 'retry'
      ? { nextAttemptAt: new Date(at.getTime() + retryDelayMs(job.attempt, deps.schedule, (deps.random ?? Math.random)())) }
      : {}),
    responseStatus: result.status,
    responseBody: Buffer.from(result.body).subarray(0, LOGGED_BODY_BYTES).toString('utf8'),
    latencyMs: result.latencyMs,
    error: result.error ?? (ok ? null : `HTTP ${result.status}`),
  });
  if (!recorded) return;
  deliveries.inc({ outcome: outcome === 'failed' ? 'gave_up' : outcome });
  if (ok) deliveryLagSeconds.observe((at.getTime() - work.event.createdAt.getTime()) / 1000);
  if (outcome === 'failed') {
    deps.logger.warn(
      { deliveryId: work.id, endpointId: work.endpoint.id, attempts: job.attempt },
      'delivery given up; endpoint failing',
    );
  }
}
