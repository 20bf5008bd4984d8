import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './helpers.ts';

/**
 * Answers Node and Fastify give below the router (issue 11, item 2), over raw sockets: each one is
 * the ErrorResponse envelope with a code and a request id, never an empty body or "Client Error".
 */

let t: TestApp;
let port: number;

beforeAll(async () => {
  t = await startTestApp();
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  port = (t.app.server.address() as { port: number }).port;
});
afterAll(async () => {
  await t.close();
});

interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Send bytes as they are and read everything until the server closes the connection. */
function rawRequest(bytes: string | Buffer): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (d) => chunks.push(d));
    socket.on('error', (e) => ((e as { code?: string }).code === 'ECONNRESET' ? undefined : reject(e)));
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const [head = '', ...rest] = text.split('\r\n\r\n');
      const [statusLine = '', ...headerLines] = head.split('\r\n');
      const headers = Object.fromEntries(
        headerLines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
      );
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body: rest.join('\r\n\r\n') });
    });
    socket.end(bytes);
  });
}

function expectEnvelope(answer: RawAnswer) {
  expect(answer.status, answer.body).toBe(400);
  expect(answer.headers['content-type']).toMatch(/^application\/json/);
  const body = JSON.parse(answer.body);
  expect(body).toEqual({
    statusCode: 400,
    error: 'Bad Request',
    code: 'VALIDATION_FAILED',
    message: expect.any(String),
    requestId: expect.any(String),
  });
  expect(answer.headers['x-request-id']).toBe(body.requestId);
}

const request = (lines: string[], body = '') => `${lines.join('\r\n')}\r\n\r\n${body}`;

describe('low-level client errors are answered in the envelope', () => {
  it.each([
    ['a 64 KiB URL', request([`GET /quests?x=${'a'.repeat(64 * 1024)} HTTP/1.1`, 'Host: x'])],
    ['a 64 KiB header', request(['GET /quests HTTP/1.1', 'Host: x', `X-Big: ${'a'.repeat(64 * 1024)}`])],
    ['a NUL in a header value', request(['GET /quests HTTP/1.1', 'Host: x', 'X-A: a\u0000b'])],
    ['a space in a header name', request(['GET /quests HTTP/1.1', 'Host: x', 'X A: b'])],
    ['duplicate Content-Length', request(['POST /quests/1 HTTP/1.1', 'Host: x', 'Content-Length: 2', 'Content-Length: 3'], '{}')],
    ['a negative Content-Length', request(['POST /quests/1 HTTP/1.1', 'Host: x', 'Content-Length: -1'], '{}')],
    [
      'Content-Length with Transfer-Encoding',
      request(['POST /quests/1 HTTP/1.1', 'Host: x', 'Content-Length: 2', 'Transfer-Encoding: chunked'], '0\r\n\r\n'),
    ],
    ['a bad chunk size', request(['POST /quests/1 HTTP/1.1', 'Host: x', 'Transfer-Encoding: chunked'], 'zz\r\n{}\r\n0\r\n\r\n')],
    ['a control character in the path', request(['GET /que\u0001sts HTTP/1.1', 'Host: x'])],
    ['HTTP/9.9', request(['GET /quests HTTP/9.9', 'Host: x'])],
    ['a missing Host', request(['GET /quests HTTP/1.1', 'Connection: close'])],
    [
      'an unknown Expect',
      request(['POST /quests/1 HTTP/1.1', 'Host: x', 'Expect: teapot', 'Content-Length: 2', 'Connection: close'], '{}'),
    ],
  ])('%s', async (_name, bytes) => {
    expectEnvelope(await rawRequest(bytes));
  });

  it('routes a dot segment as sent (no resolving to another route): /quests/.. is a bad quest id', async () => {
    for (const path of ['/quests/..', '/quests/%2E%2E']) {
      const answer = await rawRequest(request([`GET ${path} HTTP/1.1`, 'Host: x', 'Connection: close']));
      expect(answer.status, path).toBe(400);
      expect(JSON.parse(answer.body).code, path).toBe('VALIDATION_FAILED');
    }
  });

  it('still answers a well-formed request normally', async () => {
    const answer = await rawRequest(request(['GET /healthz HTTP/1.1', 'Host: x', 'Connection: close']));
    expect(answer.status).toBe(200);
  });
});
