import { connect, createServer, type Server, type Socket } from 'node:net';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { startTcpFaultProxy, type TcpFaultProxy } from './tcp-proxy.js';

interface Echo {
  server: Server;
  port: number;
  /** Bytes the echo server has received, over all connections. */
  received: () => number;
  accepted: () => number;
}

async function startEcho(): Promise<Echo> {
  let received = 0;
  let accepted = 0;
  const sockets = new Set<Socket>();
  const server = createServer({ allowHalfOpen: true }, (s) => {
    accepted++;
    sockets.add(s);
    s.on('error', () => {});
    s.on('close', () => sockets.delete(s));
    s.on('data', (d: Buffer) => {
      received += d.length;
      s.write(d);
    });
    s.on('end', () => s.end());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const addr = server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  const close = server.close.bind(server);
  Object.assign(server, {
    close: (cb?: () => void) => {
      for (const s of sockets) s.destroy();
      return close(cb);
    },
  });
  return { server, port, received: () => received, accepted: () => accepted };
}

interface Client {
  socket: Socket;
  text: () => string;
  error: () => NodeJS.ErrnoException | undefined;
  closed: () => boolean;
  ended: () => boolean;
}

function client(port: number): Client {
  const socket = connect({ host: '127.0.0.1', port });
  let text = '';
  let error: NodeJS.ErrnoException | undefined;
  let closed = false;
  let ended = false;
  socket.setEncoding('utf8');
  socket.on('data', (d: string) => (text += d));
  socket.on('error', (e) => (error = e));
  socket.on('end', () => (ended = true));
  socket.on('close', () => (closed = true));
  return { socket, text: () => text, error: () => error, closed: () => closed, ended: () => ended };
}

const connected = (c: Client) => new Promise<void>((r) => (c.socket.connecting ? c.socket.once('connect', () => r()) : r()));

describe('tcp fault proxy', () => {
  let echo: Echo;
  let proxy: TcpFaultProxy;
  const clients: Client[] = [];
  const open = async (): Promise<Client> => {
    const c = client(proxy.port);
    clients.push(c);
    await connected(c);
    return c;
  };

  beforeEach(async () => {
    echo = await startEcho();
    proxy = await startTcpFaultProxy({ host: '127.0.0.1', port: echo.port });
  });

  afterEach(async () => {
    for (const c of clients.splice(0)) c.socket.destroy();
    await proxy.close();
    await new Promise((r) => echo.server.close(r));
  });

  it('passes bytes both ways and counts its connections', async () => {
    const c = await open();
    c.socket.write('hello');
    await vi.waitFor(() => expect(c.text()).toBe('hello'));
    expect(proxy.openConnections).toBe(1);
    c.socket.end();
    await vi.waitFor(() => expect(c.closed()).toBe(true));
    await vi.waitFor(() => expect(proxy.openConnections).toBe(0));
    expect(c.error()).toBeUndefined();
  });

  it('delays every chunk each way and keeps their order', async () => {
    const c = await open();
    proxy.setFault({ kind: 'delay', ms: 40 });
    const started = performance.now();
    const parts = Array.from({ length: 20 }, (_, i) => `<${i}>`);
    for (const p of parts) c.socket.write(p);
    await vi.waitFor(() => expect(c.text()).toBe(parts.join('')));
    // A lower bound only (a slow machine may take longer): nothing can come back before 2 × 40 ms.
    expect(performance.now() - started).toBeGreaterThanOrEqual(75);
  });

  it('holds every byte during a blackhole and delivers it all, in order, after the heal', async () => {
    const old = await open();
    old.socket.write('before;');
    await vi.waitFor(() => expect(old.text()).toBe('before;'));

    proxy.setFault({ kind: 'blackhole' });
    const parts = Array.from({ length: 200 }, (_, i) => `${i}:${'x'.repeat(i % 50)};`);
    for (const p of parts) old.socket.write(p);
    const fresh = await open(); // accepted during the blackhole
    fresh.socket.write('fresh');
    await vi.waitFor(() => expect(proxy.openConnections).toBe(2));
    // Every byte sent is held by the proxy, so none reached the server; nothing came back, and no
    // connection is closed.
    const receivedBefore = echo.received();
    const sent = Buffer.byteLength(parts.join('')) + Buffer.byteLength('fresh');
    await vi.waitFor(() => expect(proxy.heldToServer.bytes).toBe(sent));
    expect(echo.received()).toBe(receivedBefore);
    expect(echo.accepted()).toBe(1);
    expect(old.text()).toBe('before;');
    expect(fresh.text()).toBe('');
    for (const c of [old, fresh]) expect([c.closed(), c.ended(), c.error()]).toEqual([false, false, undefined]);

    proxy.setFault({ kind: 'pass' });
    await vi.waitFor(() => expect(old.text()).toBe('before;' + parts.join('')));
    await vi.waitFor(() => expect(fresh.text()).toBe('fresh'));
    expect(echo.accepted()).toBe(2);
  });

  it('carries more than its buffer through a blackhole (backpressure, not loss)', async () => {
    const c = await open();
    proxy.setFault({ kind: 'blackhole' });
    const big = Array.from({ length: 3 << 20 }, (_, i) => String.fromCharCode(97 + (i % 26))).join('');
    c.socket.write(big);
    // The proxy's buffer fills up (1 MiB) and it stops reading: the rest waits in the socket.
    await vi.waitFor(() => expect(proxy.heldToServer.bytes).toBeGreaterThanOrEqual(1 << 20));
    proxy.setFault({ kind: 'pass' });
    await vi.waitFor(() => expect(c.text().length).toBe(big.length), { timeout: 10_000 });
    expect(c.text() === big).toBe(true);
  });

  it('holds a FIN during a blackhole and delivers it after the heal', async () => {
    const c = await open();
    proxy.setFault({ kind: 'blackhole' });
    c.socket.end('last');
    await vi.waitFor(() => expect(proxy.heldToServer).toEqual({ bytes: 4, ends: 1 }));
    expect(c.ended()).toBe(false);
    proxy.setFault({ kind: 'pass' });
    await vi.waitFor(() => expect([c.text(), c.ended()]).toEqual(['last', true]));
  });

  it('resets new connections while refusing and keeps existing ones working', async () => {
    const old = await open();
    proxy.setFault({ kind: 'refuse' });
    const refused = client(proxy.port);
    clients.push(refused);
    await vi.waitFor(() => expect(refused.closed()).toBe(true));
    expect(refused.error()?.code).toBe('ECONNRESET');
    expect(refused.text()).toBe('');
    old.socket.write('still here');
    await vi.waitFor(() => expect(old.text()).toBe('still here'));
    expect(echo.accepted()).toBe(1);
  });

  it('resetAll resets every open connection (ECONNRESET), also blackholed ones', async () => {
    const a = await open();
    const b = await open();
    a.socket.write('a');
    await vi.waitFor(() => expect(a.text()).toBe('a'));
    proxy.setFault({ kind: 'blackhole' });
    b.socket.write('b');
    await vi.waitFor(() => expect(proxy.openConnections).toBe(2));
    proxy.resetAll();
    await vi.waitFor(() => expect([a.closed(), b.closed()]).toEqual([true, true]));
    expect(a.error()?.code).toBe('ECONNRESET');
    expect(b.error()?.code).toBe('ECONNRESET');
    expect(proxy.openConnections).toBe(0);

    proxy.setFault({ kind: 'pass' });
    const c = await open();
    c.socket.write('again');
    await vi.waitFor(() => expect(c.text()).toBe('again'));
  });

  it('proxyUrl keeps credentials, path and query', () => {
    expect(proxy.proxyUrl('postgres://quest:s%40cret@db.internal:5432/quests?sslmode=disable')).toBe(
      `postgres://quest:s%40cret@127.0.0.1:${proxy.port}/quests?sslmode=disable`,
    );
    expect(proxy.proxyUrl('redis://:pw@localhost:6379/3')).toBe(`redis://:pw@127.0.0.1:${proxy.port}/3`);
    expect(proxy.proxyUrl('postgres://localhost/app')).toBe(`postgres://127.0.0.1:${proxy.port}/app`);
  });
});
