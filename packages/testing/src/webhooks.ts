import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type EndpointRow, insertEndpoint, type Sql } from '@quest/db';
import { type EventRow, newId } from '@quest/domain';
import { Webhook } from 'standardwebhooks';

/**
 * A webhook receiver for tests, the bench and the fault suite: it listens on 127.0.0.1, verifies
 * every delivery with the Standard Webhooks reference library (never the service's own code),
 * answers 204 to a valid one and 400 to anything else, and keeps the verified events by
 * webhook-id (receivers dedupe on it; `duplicates` counts the deliveries beyond the first).
 */
export interface ReceivedEvent {
  id: string;
  type: string;
  created_at: string;
  quest_id: number | null;
  allocation_id: string | null;
  batch_id: string | null;
  // biome-ignore lint/suspicious/noExplicitAny: a test reads whatever the event carries
  data: any;
  /** When this receiver first verified it (ms since epoch). */
  receivedAt: number;
}

export interface WebhookReceiver {
  url: string;
  port: number;
  /** Verified events by id, in the order they first arrived. */
  events: Map<string, ReceivedEvent>;
  deliveries: number;
  duplicates: number;
  /** Deliveries whose signature (or headers, or timestamp) did not verify. */
  invalid: number;
  /** The secret (or secrets: any may verify) deliveries must be signed with. */
  secrets: string[];
  /** When true, a delivery is valid only if every one of `secrets` verifies it (a rotation: both sign). */
  requireAllSecrets: boolean;
  /** While set, answer every delivery with this status without verifying it (a receiver that is failing). */
  failWith: number | undefined;
  /** Answer each delivery this long after it arrived (a slow receiver: deliveries stay in hand). */
  delayMs: number;
  /** Deliveries received and not answered yet. */
  inFlight: number;
  /** Stop listening and drop open connections: deliveries are refused until up(). */
  down(): Promise<void>;
  /** Listen again, on the same port. */
  up(): Promise<void>;
  close(): Promise<void>;
}

export async function startWebhookReceiver(opts: { port?: number } = {}): Promise<WebhookReceiver> {
  const receiver: WebhookReceiver = {
    url: '',
    port: 0,
    events: new Map(),
    deliveries: 0,
    duplicates: 0,
    invalid: 0,
    secrets: [],
    requireAllSecrets: false,
    failWith: undefined,
    delayMs: 0,
    inFlight: 0,
    down: async () => {},
    up: async () => {},
    close: async () => {},
  };
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (c: Buffer) => chunks.push(c));
    request.on('end', async () => {
      receiver.deliveries++;
      if (receiver.delayMs > 0) {
        receiver.inFlight++;
        await new Promise((r) => setTimeout(r, receiver.delayMs));
        receiver.inFlight--;
      }
      if (receiver.failWith !== undefined) {
        response.writeHead(receiver.failWith).end('receiver failing on purpose');
        return;
      }
      const body = Buffer.concat(chunks).toString('utf8');
      const headers = {
        'webhook-id': String(request.headers['webhook-id'] ?? ''),
        'webhook-timestamp': String(request.headers['webhook-timestamp'] ?? ''),
        'webhook-signature': String(request.headers['webhook-signature'] ?? ''),
      };
      const verified = receiver.secrets.map((secret) => {
        try {
          return new Webhook(secret).verify(body, headers) as ReceivedEvent;
        } catch {
          return undefined;
        }
      });
      const event = receiver.requireAllSecrets ? (verified.every(Boolean) ? verified[0] : undefined) : verified.find(Boolean);
      if (!event || event.id !== headers['webhook-id']) {
        receiver.invalid++;
        response.writeHead(400).end('signature does not verify');
        return;
      }
      if (receiver.events.has(event.id)) receiver.duplicates++;
      else receiver.events.set(event.id, { ...event, receivedAt: Date.now() });
      response.writeHead(204).end();
    });
  });
  server.keepAliveTimeout = 30_000;
  const listen = (port: number) => new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const stop = () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  await listen(opts.port ?? 0);
  receiver.port = (server.address() as AddressInfo).port;
  receiver.url = `http://127.0.0.1:${receiver.port}/hooks`;
  receiver.down = stop;
  receiver.up = () => listen(receiver.port);
  receiver.close = () => (server.listening ? stop() : Promise.resolve());
  return receiver;
}

/**
 * Make deliveries due again and claimable by a new group, as if the queue had lost their job and
 * they had been handed over afresh: what a stale job must survive (the service itself re-adds a
 * lost job under its own id; see the reconciler).
 */
export async function handOverAgain(sql: Sql, ids: readonly number[]): Promise<void> {
  await sql`update webhook_deliveries set enqueued_at = null, job_id = null, next_attempt_at = now()
            where id = any(${ids as number[]}::bigint[]) and status = 'pending'`;
}

/**
 * A webhook endpoint of `ownerId` for tests that never sign a delivery: its stored secret is a
 * placeholder byte, not a ciphertext (tests that deliver encrypt a real one).
 */
export function createTestEndpoint(
  sql: Sql,
  ownerId: string,
  fields: { url?: string; eventTypes?: string[] | null } = {},
): Promise<EndpointRow> {
  return insertEndpoint(sql, {
    id: newId('whe'),
    ownerId,
    url: fields.url ?? 'https://hooks.example.com/',
    description: '',
    eventTypes: fields.eventTypes ?? null,
    secretEnc: Buffer.from([1]),
  });
}

/** `n` events of `ownerId` with fresh ids, as insertEvents takes them: payout.created, no quest, empty data, now. */
export function testEvents(ownerId: string, n: number): EventRow[] {
  const createdAt = new Date();
  return Array.from({ length: n }, () => ({
    id: newId('evt'),
    ownerId,
    type: 'payout.created' as const,
    questId: null,
    allocationId: null,
    batchId: null,
    data: {},
    createdAt,
  }));
}
