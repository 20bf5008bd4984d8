import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { WEBHOOK_QUEUE } from '@quest/queue';
import { startWebhookReceiver } from '@quest/testing/webhooks';
import type { ChaosWebhooks, Cluster } from './cluster.ts';
import { sleep } from './scenario.ts';

/**
 * Webhooks through a fault (docs/events.md): the cluster's owner has one endpoint, a receiver on
 * 127.0.0.1 that verifies every delivery with the `standardwebhooks` library. Afterwards every
 * event the outbox holds for the owner must have been delivered at least once, verified, recorded
 * as delivered in the delivery log, and every payout must have its `payout.created` event.
 */

/** Short retry pauses and a short attempt timeout, so a receiver back up is retried within seconds. */
export const WEBHOOK_ENV: Record<string, string> = {
  WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
  WEBHOOK_POLL_MS: '50',
  WEBHOOK_RETRY_BASE_MS: '500',
  WEBHOOK_RETRY_MAX_MS: '4000',
  // The delivery job's lock is 3 × this: a killed worker's deliveries stall and are retried after it.
  WEBHOOK_TIMEOUT_MS: '2000',
};

export function webhookEnv(): Record<string, string> {
  return { ...WEBHOOK_ENV, WEBHOOK_SECRET_KEY: randomBytes(32).toString('hex') };
}

/** Every event delivered within this long after the load's requests were decided. */
export const DELIVERY_BOUND_MS = 60_000;

/** Start the receiver and subscribe it to every event of the cluster's owner. */
export async function subscribe(c: Cluster, opts: { delayMs?: number } = {}): Promise<ChaosWebhooks> {
  const receiver = await startWebhookReceiver();
  receiver.delayMs = opts.delayMs ?? 0;
  const res = await fetch(`${c.baseUrl}/webhook-endpoints`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': c.owner.apiKey },
    body: JSON.stringify({ url: receiver.url, description: 'chaos receiver' }),
  });
  const body = (await res.json()) as { endpoint?: { id: string; secret: string } };
  if (res.status !== 200 || !body.endpoint) {
    await receiver.close();
    throw new Error(`POST /webhook-endpoints answered ${res.status}: ${JSON.stringify(body)}`);
  }
  receiver.secrets = [body.endpoint.secret];
  return { receiver, endpointId: body.endpoint.id };
}

/** Delivery jobs the webhook queue holds in Redis, waiting or in hand. */
export async function deliveryJobs(c: Cluster): Promise<{ waiting: number; active: string[] }> {
  const redis = new Redis(c.redis.url, { maxRetriesPerRequest: 1 });
  redis.on('error', () => {});
  try {
    const queue = `${c.env.QUEUE_PREFIX}:${WEBHOOK_QUEUE}`;
    const [waiting, active] = await Promise.all([redis.llen(`${queue}:wait`), redis.lrange(`${queue}:active`, 0, -1)]);
    const workers = await Promise.all(active.map((id) => redis.hget(`${queue}:${id}`, 'pb')));
    return { waiting, active: workers.map((w) => w ?? '') };
  } finally {
    redis.disconnect();
  }
}

/**
 * Wait (bounded) until the receiver verified every event of the owner, then list what is wrong:
 * events never delivered, deliveries that did not verify, payouts without their event.
 */
export async function checkWebhooks(c: Cluster, w: ChaosWebhooks): Promise<{ violations: string[]; note: string }> {
  const { receiver } = w;
  const v: string[] = [];
  const deadline = Date.now() + DELIVERY_BOUND_MS;
  let missing: string[] = [];
  let total = 0;
  let unrecorded = 0;
  for (;;) {
    const events = await c.sql<{ id: string }[]>`select id from events where owner_id = ${c.owner.id} order by id`;
    total = events.length;
    missing = events.map((e) => e.id).filter((id) => !receiver.events.has(id));
    // The service's own log must agree: a delivery in hand when its worker died is attempted again.
    const [open] = await c.sql<{ n: number }[]>`
      select count(*)::int as n from webhook_deliveries where endpoint_id = ${w.endpointId} and status <> 'delivered'`;
    unrecorded = open?.n ?? 0;
    if ((missing.length === 0 && unrecorded === 0) || Date.now() > deadline) break;
    await sleep(200);
  }
  if (unrecorded) v.push(`${unrecorded} deliveries not recorded as delivered ${DELIVERY_BOUND_MS / 1000} s after the load`);
  if (missing.length) {
    const rows = await c.sql<{ status: string; n: number; error: string | null }[]>`
      select d.status, count(*)::int as n, max(d.error) as error from webhook_deliveries d
      where d.event_id = any(${missing}::text[]) group by 1`;
    v.push(
      `${missing.length} of ${total} events not delivered ${DELIVERY_BOUND_MS / 1000} s after the load (e.g. ${missing[0]}; deliveries ${JSON.stringify(rows)})`,
    );
  }
  if (receiver.invalid) v.push(`${receiver.invalid} deliveries whose signature did not verify`);
  const [orphans] = await c.sql<{ n: number }[]>`
    select count(*)::int as n from payouts p join quests q on q.id = p.quest_id
    where q.owner_id = ${c.owner.id} and not exists (
      select 1 from events e where e.type = 'payout.created' and e.data -> 'payout' ->> 'id' = p.id)`;
  if (orphans?.n) v.push(`${orphans.n} payouts without a payout.created event`);
  const [stray] = await c.sql<{ n: number }[]>`
    select count(*)::int as n from events e where e.type = 'payout.created'
      and not exists (select 1 from payouts p where p.id = e.data -> 'payout' ->> 'id')`;
  if (stray?.n) v.push(`${stray.n} payout.created events without their payout`);
  return {
    violations: v,
    note: `${total} events, ${receiver.events.size} verified, ${receiver.deliveries - receiver.events.size} more deliveries (${receiver.duplicates} duplicates)`,
  };
}
