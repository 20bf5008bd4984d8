import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './helpers.ts';

/**
 * Slow and idle clients (issue 11, item 9): a slowloris trickling its headers is cut off by the
 * headers timeout, an idle connection by the keep-alive timeout, and the connection cap holds.
 * Everything here waits for the server to close sockets; the trickle is bounded.
 */

let t: TestApp;
let port: number;

beforeAll(async () => {
  t = await startTestApp({
    env: {
      HTTP_HEADERS_TIMEOUT_MS: '500',
      HTTP_REQUEST_TIMEOUT_MS: '1000',
      HTTP_KEEP_ALIVE_TIMEOUT_MS: '300',
      HTTP_MAX_CONNECTIONS: '5',
    },
  });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  port = (t.app.server.address() as { port: number }).port;
});
afterAll(async () => {
  await t.close();
});

interface Watched {
  socket: Socket;
  closed: Promise<string>;
}

function open(): Promise<Watched> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let received = '';
    socket.on('data', (d) => (received += d));
    socket.on('error', () => undefined);
    const closed = new Promise<string>((r) => socket.on('close', () => r(received)));
    socket.once('connect', () => resolve({ socket, closed }));
    socket.once('error', reject);
  });
}

describe('slow and idle clients', () => {
  it('cuts off a client trickling its headers (slowloris) with the envelope', async () => {
    const { socket, closed } = await open();
    socket.write('GET /quests HTTP/1.1\r\nHost: x\r\n');
    let sent = 0;
    // One header byte every 50 ms, at most 200 bytes (10 s): the server must close well before.
    const trickle = setInterval(() => {
      if (socket.destroyed || sent++ >= 200) return clearInterval(trickle);
      socket.write('X');
    }, 50);
    const answer = await closed;
    clearInterval(trickle);
    expect(sent).toBeLessThan(200);
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))).toMatchObject({ code: 'VALIDATION_FAILED' });
  });

  it('closes an idle keep-alive connection', async () => {
    const { socket, closed } = await open();
    socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    expect(await closed).toMatch(/^HTTP\/1\.1 200 /);
  });

  it(`holds at most HTTP_MAX_CONNECTIONS connections`, async () => {
    const held = await Promise.all(Array.from({ length: 5 }, () => open()));
    // Each held connection has started a request, so the server has surely accepted it.
    for (const h of held) h.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n');
    await expect.poll(() => new Promise<number>((r) => t.app.server.getConnections((_e, n) => r(n)))).toBe(5);
    const extra = await open();
    extra.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    expect(await extra.closed).toBe('');
    for (const h of held) h.socket.destroy();
  });
});
