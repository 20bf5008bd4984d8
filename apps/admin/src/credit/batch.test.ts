import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { Api } from './api.ts';
import { BatchClient } from './batch.ts';
import type { CreditItem } from './rows.ts';

/** A stand-in for the batches API: answers each request with the next scripted answer. */
type Scripted = (req: IncomingMessage, body: string) => { status: number; headers?: Record<string, string>; json: unknown };

let server: Server | undefined;
afterEach(async () => {
  await new Promise((r) => server?.close(r));
  server = undefined;
});

async function fakeApi(script: Scripted[]) {
  const seen: { method: string; url: string; headers: IncomingMessage['headers'] }[] = [];
  server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, headers: req.headers });
      const next = script.shift();
      if (!next) {
        res.writeHead(500).end('{"code":"SCRIPT_EXHAUSTED","message":"no more answers"}');
        return;
      }
      const a = next(req, body);
      res.writeHead(a.status, { 'content-type': 'application/json', ...a.headers }).end(JSON.stringify(a.json));
    });
  });
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  const baseUrl = `http://127.0.0.1:${(server!.address() as AddressInfo).port}`;
  return { baseUrl, seen };
}

const A = `0x${'ab'.repeat(20)}`;
const items: CreditItem[] = [0, 1, 2, 3].map((i) => ({ line: i + 2, address: A, points: i + 1, pointsText: String(i + 1) }));
const batch = (status: string, processed: number, withResults = false) => ({
  batch: {
    id: 'bat_x',
    status,
    total: 4,
    processed,
    updated_at: `t${processed}`,
    ...(withResults ? { results: items.map((_, index) => ({ index, status: 'completed' })) } : {}),
  },
});
const client = (baseUrl: string) =>
  new BatchClient(new Api(baseUrl, 'sk_test', new AbortController().signal), 7, {
    respondAsync: true,
    stall: { timeoutMs: 60_000, tries: 3 },
  });

describe('BatchClient', () => {
  it('asks for respond-async, follows the Location, and counts a batch an earlier run created as replayed up to its progress then', async () => {
    const { baseUrl, seen } = await fakeApi([
      () => ({
        status: 202,
        headers: { location: '/quests/7/batches/bat_x', 'idempotent-replayed': 'true' },
        json: batch('processing', 3),
      }),
      () => ({ status: 200, json: batch('completed', 4, true) }),
    ]);
    const c = client(baseUrl);
    const accepted = await c.submit('k1', items, 'batch 1');
    expect(accepted.replayedBelow).toBe(3);
    expect(seen[0]).toMatchObject({ method: 'POST', url: '/quests/7/batches' });
    expect(seen[0]!.headers).toMatchObject({ prefer: 'respond-async', 'idempotency-key': 'k1' });
    const progress: number[] = [];
    const results = await c.follow(accepted, 'k1', items, 'batch 1', (n) => progress.push(n));
    expect(results.map((r) => r.index)).toEqual([0, 1, 2, 3]);
    expect(seen[1]).toMatchObject({ method: 'GET', url: '/quests/7/batches/bat_x?limit=1000&offset=0' });
    expect(progress.at(-1)).toBe(4);
  });

  it('a completed batch replayed in full: every item is a replay', async () => {
    const { baseUrl } = await fakeApi([
      () => ({ status: 200, headers: { 'idempotent-replayed': 'true' }, json: batch('completed', 4, true) }),
    ]);
    expect((await client(baseUrl).submit('k', items, 'b')).replayedBelow).toBe(4);
  });

  it('a batch this run created is new, even when a retry of its own POST is answered as a replay', async () => {
    const { baseUrl } = await fakeApi([
      () => ({ status: 503, headers: { 'retry-after': '0' }, json: { code: 'QUEUE_UNAVAILABLE', message: 'try again' } }),
      () => ({
        status: 202,
        headers: { location: '/quests/7/batches/bat_x', 'idempotent-replayed': 'true' },
        json: batch('processing', 2),
      }),
    ]);
    expect((await client(baseUrl).submit('k', items, 'b')).replayedBelow).toBe(0);
  });

  it('without the header, nothing is a replay', async () => {
    const { baseUrl } = await fakeApi([() => ({ status: 200, json: batch('completed', 4, true) })]);
    expect((await client(baseUrl).submit('k', items, 'b')).replayedBelow).toBe(0);
  });
});
