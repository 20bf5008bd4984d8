import { performance } from 'node:perf_hooks';
import { startWebhookReceiver, type WebhookReceiver } from '@quest/testing/webhooks';
import { until } from '@quest/testing/wait';
import type { Ctx, ScenarioOutput, Verdict } from '../context.ts';
import { cpuNote, cpuPerCredit } from '../figures.ts';
import { cpuDelta, cpuSnapshot } from '../probes/cpu.ts';
import { measured } from '../measure.ts';
import { type BenchOwner, seedOwner, seedQuests } from '../seed.ts';
import { formatValue, groupThousands, summarize } from '../stats.ts';
import { finish, lean } from '../verify.ts';
import { throughputServiceRun } from './runs.ts';

/**
 * Webhooks against allocations (docs/events.md): the throughput load of one owner with no webhook
 * endpoint, then of an owner with one endpoint subscribed to every event, then without again (the
 * shared machine drifts; the ratio uses the mean of the two). The endpoint is a receiver in this
 * process (`@quest/testing/webhooks`) that verifies every delivery with the `standardwebhooks`
 * library. Delivery lag = the receiver's clock when it verified an event − the event's
 * `created_at` (its decision's time), over the events of the run with the endpoint.
 *
 * Then a batch of `WEBHOOK_BATCH_ITEMS` items to that owner's quest: one verified
 * `payout.created` per credit plus `batch.completed`, and `GET /events` after the last event
 * before the batch answers exactly those ids, in item order, then the completion.
 */

export const WEBHOOK_BATCH_ITEMS = 10_000;
/** How long deliveries may take to catch up after a run before the scenario fails. */
const DRAIN_TIMEOUT_MS = 180_000;

interface FeedEvent {
  id: string;
  type: string;
  allocation_id: string | null;
  batch_id: string | null;
  // biome-ignore lint/suspicious/noExplicitAny: the event's view, checked field by field
  data: any;
}

async function api<T>(
  ctx: Ctx,
  apiKey: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: T }> {
  const res = await fetch(`${ctx.api.baseUrl}${path}`, {
    method,
    headers: { 'x-api-key': apiKey, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {}
  return { status: res.status, body: parsed as T };
}

/** The owner's events from GET /events after `after` (or from the start), page by page. */
async function feed(ctx: Ctx, apiKey: string, after: string | undefined): Promise<FeedEvent[]> {
  const all: FeedEvent[] = [];
  for (;;) {
    const cursor = all.at(-1)?.id ?? after;
    const res = await api<{ events: FeedEvent[]; has_more: boolean }>(
      ctx,
      apiKey,
      'GET',
      `/events?limit=1000${cursor ? `&after=${cursor}` : ''}`,
    );
    if (res.status !== 200) throw new Error(`GET /events: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
    all.push(...res.body.events);
    if (!res.body.has_more) return all;
  }
}

/** Wait until the receiver verified every event of `ids`; the time each arrived, in ms after its decision. */
async function delivered(receiver: WebhookReceiver, ids: readonly string[], what: string): Promise<number[]> {
  await until(
    `${what}: ${groupThousands(ids.length)} deliveries`,
    DRAIN_TIMEOUT_MS,
    async () => (ids.every((id) => receiver.events.has(id)) ? true : undefined),
    { intervalMs: 50 },
  );
  return ids.map((id) => {
    const e = receiver.events.get(id)!;
    return e.receivedAt - Date.parse(e.created_at);
  });
}

/** A new owner with one endpoint, the receiver's, subscribed to every event. */
async function subscribeReceiver(ctx: Ctx, receiver: WebhookReceiver): Promise<BenchOwner> {
  const subscribed: BenchOwner = await seedOwner(ctx.infra.sql);
  const created = await api<{ endpoint: { id: string; secret: string } }>(ctx, subscribed.apiKey, 'POST', '/webhook-endpoints', {
    url: receiver.url,
    description: 'bench receiver',
  });
  if (created.status !== 200) throw new Error(`POST /webhook-endpoints: ${created.status} ${JSON.stringify(created.body)}`);
  receiver.secrets = [created.body.endpoint.secret];
  return subscribed;
}

/**
 * The throughput load without an endpoint, with one (until its deliveries arrived), without again;
 * what it costs the service per allocation with and without.
 */
async function measureLoads(ctx: Ctx, receiver: WebhookReceiver, subscribed: BenchOwner, reasons: string[]) {
  const { cfg, infra } = ctx;
  const run = (c: Ctx, label: string, seed: number) =>
    throughputServiceRun(c, label, { durationS: cfg.throughputS, hot: false, sampleMemory: false, seed });
  ctx.log(`webhooks: throughput without an endpoint, ${cfg.connections} connections, ${cfg.throughputS} s`);
  const before = await run(ctx, 'webhooks-without-1', 31);

  ctx.log(`webhooks: throughput with one subscribed endpoint (receiver at ${receiver.url})`);
  const withRun = await run({ ...ctx, owner: subscribed }, 'webhooks-with', 32);
  const loadEnd = Date.now();
  // The deliveries the load left behind are its cost too: the service's CPU until they arrived.
  const drainFrom = cpuSnapshot(ctx.services());
  const runEvents = await infra.sql<{ id: string }[]>`
    select id from events where owner_id = ${subscribed.ownerId} and quest_id = any(${withRun.quests}::int[]) order by id`;
  const lags = await delivered(
    receiver,
    runEvents.map((e) => e.id),
    'webhooks run',
  );
  const drainCpu = cpuDelta(drainFrom, cpuSnapshot(ctx.services()));
  const drainS = (Math.max(...runEvents.map((e) => receiver.events.get(e.id)!.receivedAt)) - loadEnd) / 1000;
  const lag = summarize(lags);
  if (runEvents.length < withRun.load.ok200)
    reasons.push(`${runEvents.length} events for ${withRun.load.ok200} allocations answered 200`);

  ctx.log('webhooks: throughput without an endpoint, again');
  const after = await run(ctx, 'webhooks-without-2', 33);
  // Capacity, the receiver aside: on a machine of its own the service's rate is its CPU ÷ its CPU
  // per allocation, so the ratio of those is what one endpoint costs it — whatever the receiver (in
  // this bench process, on the same 2 cores here; a customer's server in production) takes.
  const cpuWithout =
    ((cpuPerCredit(before.cpu, before.load.ok200, 'service') ?? 0) +
      (cpuPerCredit(after.cpu, after.load.ok200, 'service') ?? 0)) /
    2;
  const withCpu = { ...withRun.cpu };
  for (const [group, seconds] of Object.entries(drainCpu)) withCpu[group] = (withCpu[group] ?? 0) + seconds;
  const cpuWith = cpuPerCredit(withCpu, withRun.load.ok200, 'service') ?? 0;
  return { before, withRun, after, runEvents, drainCpu, drainS, lag, cpuWithout, cpuWith };
}

/** POST a batch of `addresses` to the quest; measured until the receiver verified every one of its events. */
async function measureBatch(ctx: Ctx, receiver: WebhookReceiver, apiKey: string, questId: number, addresses: string[]) {
  return measured(ctx, 'webhooks batch (service)', async () => {
    const t0 = performance.now();
    const res = await api<{ batch: { id: string } }>(ctx, apiKey, 'POST', `/quests/${questId}/batches`, {
      allocations: addresses.map((address) => ({ address, points: 1 })),
    });
    if (res.status !== 200 && res.status !== 202) throw new Error(`POST batches: ${res.status} ${JSON.stringify(res.body)}`);
    const batchId = res.body.batch.id;
    // Events are in the outbox once the batch's chunks commit; wait for all of them to arrive.
    const ids = await until(
      'the batch to complete',
      DRAIN_TIMEOUT_MS,
      async () => {
        const rows = await ctx.infra.sql<{ id: string; type: string }[]>`
          select id, type from events where batch_id = ${batchId} order by id`;
        return rows.some((r) => r.type === 'batch.completed') ? rows.map((r) => r.id) : undefined;
      },
      { intervalMs: 50 },
    );
    const batchLags = await delivered(receiver, ids, 'webhooks batch');
    return { batchId, ids, lags: batchLags, elapsedS: (performance.now() - t0) / 1000 };
  });
}

/**
 * One payout.created per credit, in item order in the feed, then batch.completed; every
 * payout id in the events is one the database holds for the quest.
 */
async function checkBatchEvents(
  ctx: Ctx,
  b: { receiver: WebhookReceiver; apiKey: string; questId: number; addresses: string[]; lastBefore: string | undefined },
  batch: { batchId: string; ids: string[] },
  reasons: string[],
) {
  const { receiver, addresses } = b;
  const events = batch.ids.map((id) => receiver.events.get(id)!);
  const byIndex = new Map(events.filter((e) => e.type === 'payout.created').map((e) => [e.allocation_id, e]));
  const missing = addresses.filter((_, i) => !byIndex.has(`${batch.batchId}:${i}`)).length;
  if (missing) reasons.push(`batch: ${missing} items without a payout.created`);
  if (byIndex.size !== addresses.length) reasons.push(`batch: ${byIndex.size} payout.created for ${addresses.length} items`);
  const completed = events.filter((e) => e.type === 'batch.completed');
  if (completed.length !== 1) reasons.push(`batch: ${completed.length} batch.completed events`);
  const payouts = await ctx.infra.sql<{ id: string }[]>`select id from payouts where quest_id = ${b.questId}`;
  const eventPayouts = new Set([...byIndex.values()].map((e) => e.data?.payout?.id as string));
  if (payouts.length !== addresses.length || payouts.some((p) => !eventPayouts.has(p.id)))
    reasons.push(`batch: ${payouts.length} payouts in the database, ${eventPayouts.size} in the events, not the same`);
  const fed = await feed(ctx, b.apiKey, b.lastBefore);
  const expected = [...addresses.map((_, i) => byIndex.get(`${batch.batchId}:${i}`)?.id), completed[0]?.id];
  const feedInOrder = fed.length === expected.length && fed.every((e, i) => e.id === expected[i]);
  if (!feedInOrder)
    reasons.push(`batch: GET /events answered ${fed.length} events, not the ${expected.length} delivered in item order`);
  return events;
}

export async function webhooksScenario(ctx: Ctx): Promise<ScenarioOutput> {
  const { infra } = ctx;
  const reasons: string[] = [];
  const receiver = await startWebhookReceiver();
  try {
    const subscribed = await subscribeReceiver(ctx, receiver);
    const loads = await measureLoads(ctx, receiver, subscribed, reasons);
    const { before, withRun, after, runEvents, drainCpu, drainS, lag, cpuWithout, cpuWith } = loads;
    const withoutRate = (before.load.rate + after.load.rate) / 2;

    // The batch: POST → every event verified by the receiver.
    const [questId] = await seedQuests(infra.sql, subscribed.ownerId, 1, 'webhooks-batch');
    const addresses = ctx.accounts.slice(0, WEBHOOK_BATCH_ITEMS);
    const lastBefore = (await feed(ctx, subscribed.apiKey, undefined)).at(-1)?.id;
    ctx.log(`webhooks: a ${groupThousands(addresses.length)}-item batch, delivered`);
    const { result: batch, cpu: batchCpu } = await measureBatch(ctx, receiver, subscribed.apiKey, questId!, addresses);
    const b = { receiver, apiKey: subscribed.apiKey, questId: questId!, addresses, lastBefore };
    const events = await checkBatchEvents(ctx, b, batch, reasons);
    if (receiver.invalid) reasons.push(`${receiver.invalid} deliveries whose signature did not verify`);

    const batchLag = summarize(batch.lags);
    const firstCreated = Math.min(...events.map((e) => Date.parse(e.created_at)));
    const lastReceived = Math.max(...events.map((e) => e.receivedAt));
    const batchDeliveryRate = events.length / Math.max(0.001, (lastReceived - firstCreated) / 1000);
    const verdict: Verdict = { ok: reasons.length === 0, reasons };
    return finish(
      ctx,
      'webhooks',
      [before.verdict, withRun.verdict, after.verdict, verdict],
      [
        {
          metric: 'allocations/s with one endpoint (limit: without)',
          unit: '/s',
          service: withRun.load.rate,
          limit: withoutRate,
        },
        {
          metric: 'service CPU per allocation: without / with one endpoint (deliveries included)',
          unit: 'text',
          service: `${formatValue(cpuWithout, 'ms')} / ${formatValue(cpuWith, 'ms')}`,
          limit: undefined,
        },
        {
          metric: 'capacity with one endpoint ÷ without (service CPU per allocation; the receiver not counted)',
          unit: 'x',
          service: cpuWith > 0 ? cpuWithout / cpuWith : null,
          limit: undefined,
        },
        { metric: 'delivery lag p50', unit: 'ms', service: lag.p50, limit: undefined },
        { metric: 'delivery lag p99', unit: 'ms', service: lag.p99, limit: undefined },
        { metric: 'deliveries still arriving after the load stopped', unit: 's', service: drainS, limit: undefined },
        {
          metric: `${groupThousands(addresses.length)}-item batch: POST → last delivery`,
          unit: 's',
          service: batch.elapsedS,
          limit: undefined,
        },
        {
          metric: 'batch deliveries/s (first decision → last delivery)',
          unit: '/s',
          service: batchDeliveryRate,
          limit: undefined,
        },
        { metric: 'batch delivery lag p99', unit: 'ms', service: batchLag.p99, limit: undefined },
        {
          metric: 'deliveries / duplicates / invalid signatures',
          unit: 'text',
          service: `${groupThousands(receiver.deliveries)} / ${receiver.duplicates} / ${receiver.invalid}`,
          limit: undefined,
        },
      ],
      {
        without1: { ...lean(before.load), cpu: before.cpu },
        with: { ...lean(withRun.load), cpu: withRun.cpu, drainCpu, events: runEvents.length, lag, drainS },
        without2: { ...lean(after.load), cpu: after.cpu },
        batch: {
          items: addresses.length,
          events: events.length,
          elapsedS: batch.elapsedS,
          lag: batchLag,
          batchDeliveryRate,
          cpu: batchCpu,
        },
        receiver: { deliveries: receiver.deliveries, duplicates: receiver.duplicates, invalid: receiver.invalid },
      },
      [
        `webhooks: without ${formatValue(before.load.rate, '/s')} and ${formatValue(after.load.rate, '/s')}, with ${formatValue(withRun.load.rate, '/s')} (${groupThousands(runEvents.length)} events, lag p50 ${formatValue(lag.p50, 'ms')} p99 ${formatValue(lag.p99, 'ms')} max ${formatValue(lag.max, 'ms')})`,
        cpuNote('webhooks without (service)', before.load.elapsedS, before.cpu, before.load.ok200),
        cpuNote('webhooks with (service)', withRun.load.elapsedS, withRun.cpu, withRun.load.ok200),
        cpuNote('webhooks batch (service, to the last delivery)', batch.elapsedS, batchCpu, addresses.length),
      ],
    );
  } finally {
    await receiver.close();
  }
}
