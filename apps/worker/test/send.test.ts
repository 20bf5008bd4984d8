import type { lookup } from 'node:dns';
import { createServer, type Server } from 'node:http';
import { type AddressInfo, createServer as createTcpServer, type Server as TcpServer, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sendWebhook } from '../src/webhooks/send.ts';

let server: Server;
let port: number;
let hits = 0;
/** Accepts TCP connections and never answers: a TLS handshake that never completes. */
let silent: TcpServer;
let silentPort: number;
const silentSockets: Socket[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    hits++;
    if (req.url === '/redirect') return void res.writeHead(302, { location: 'http://169.254.169.254/' }).end();
    if (req.url === '/slow') return; // never answers
    if (req.url === '/big') return void res.writeHead(200).end('x'.repeat(200_000));
    res.writeHead(204).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
  silent = createTcpServer((socket) => void silentSockets.push(socket));
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
  silentPort = (silent.address() as AddressInfo).port;
});
afterAll(() => {
  server.closeAllConnections();
  server.close();
  for (const socket of silentSockets) socket.destroy();
  silent.close();
});

/** A resolver that says every name is 127.0.0.1: a DNS answer that rebinds a public name to loopback. */
const rebinding = ((_host: string, _opts: unknown, cb: (e: null, a: { address: string; family: number }[]) => void) =>
  cb(null, [{ address: '127.0.0.1', family: 4 }])) as unknown as typeof lookup;

const opts = { allowPrivate: false, timeoutMs: 2000, maxBodyBytes: 64 * 1024, resolve: rebinding };

describe('sendWebhook', () => {
  it('refuses, at connect time, a name that resolves to a private address: nothing reaches it', async () => {
    const before = hits;
    const result = await sendWebhook(`https://hooks.example.com:${port}/`, {}, '{}', opts);
    expect(result.status).toBeNull();
    expect(result.error).toMatch(/blocked: hooks\.example\.com resolves to 127\.0\.0\.1 is a loopback address/);
    expect(hits).toBe(before);
  });

  it('refuses private IP literals and http:// unless private URLs are allowed', async () => {
    for (const url of [
      `https://127.0.0.1:${port}/`,
      `https://[::ffff:169.254.169.254]:${port}/`,
      `http://example.com:${port}/`,
    ]) {
      const result = await sendWebhook(url, {}, '{}', opts);
      expect([result.status, result.error !== null], url).toEqual([null, true]);
    }
    const allowed = await sendWebhook(`http://hooks.example.com:${port}/`, {}, '{}', { ...opts, allowPrivate: true });
    expect(allowed).toMatchObject({ status: 204, error: null });
  });

  it('follows no redirect, reads at most 64 KiB, and gives up after the timeout', async () => {
    const lax = { ...opts, allowPrivate: true, timeoutMs: 300 };
    expect((await sendWebhook(`http://127.0.0.1:${port}/redirect`, {}, '{}', lax)).status).toBe(302);
    const big = await sendWebhook(`http://127.0.0.1:${port}/big`, {}, '{}', lax);
    expect([big.status, big.body.length]).toEqual([200, 64 * 1024]);
    const slow = await sendWebhook(`http://127.0.0.1:${port}/slow`, {}, '{}', lax);
    expect(slow).toMatchObject({ status: null, error: 'timed out after 300 ms' });
  });

  it('bounds the connection by the same timeout: a TLS handshake that never ends, a lookup that never answers', async () => {
    const lax = { ...opts, allowPrivate: true, timeoutMs: 300 };
    // Left to the HTTP client's own connect timeout (10 s), each would hold its slot until then: the
    // bound checked is the contract (well under that), not a speed.
    const withinTimeout = 5_000;
    const handshake = await sendWebhook(`https://127.0.0.1:${silentPort}/`, {}, '{}', lax);
    expect(handshake).toMatchObject({ status: null, error: 'timed out after 300 ms' });
    expect(handshake.latencyMs).toBeLessThan(withinTimeout);
    const mute = (() => {}) as unknown as typeof lookup;
    const lookupNever = await sendWebhook(`https://hooks.example.com:${port}/`, {}, '{}', {
      ...opts,
      timeoutMs: 300,
      resolve: mute,
    });
    expect(lookupNever).toMatchObject({ status: null, error: 'timed out after 300 ms' });
    expect(lookupNever.latencyMs).toBeLessThan(withinTimeout);
  });
});
