import { randomUUID } from 'node:crypto';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { type ErrorCode, STATUS_BY_CODE } from '@quest/domain';
import type { FastifyBaseLogger } from 'fastify';
import { errorBody } from './errors.ts';
import { requestIdFor } from './request-id.ts';

/**
 * Answers Node gives below Fastify's router (a request it cannot parse, headers too large, a
 * request that timed out, an unknown `Expect`) carry the same ErrorResponse envelope as every other
 * answer, with a code and a request id, instead of Node's empty bodies or Fastify's
 * `"Client Error"`. Their statuses are the documented ones: the spec describes every client-side
 * failure as 400.
 */

/** What a low-level parse error means to the client: a message by Node's error code. */
const CLIENT_ERROR_MESSAGES: Record<string, string> = {
  HPE_HEADER_OVERFLOW: 'The request line or headers are too large.',
  HPE_URI_OVERFLOW: 'The request line or headers are too large.',
  ERR_HTTP_REQUEST_TIMEOUT: 'The request was not received in time.',
  HPE_HEADER_TIMEOUT: 'The request headers were not received in time.',
  HPE_INVALID_VERSION: 'Unsupported HTTP version.',
};

function rawAnswer(code: ErrorCode, message: string, requestId: string): string {
  const body = JSON.stringify(errorBody({ code, message }, requestId));
  const status = STATUS_BY_CODE[code];
  return (
    `HTTP/1.1 ${status} ${status === 400 ? 'Bad Request' : 'Error'}\r\n` +
    'Content-Type: application/json; charset=utf-8\r\n' +
    `Content-Length: ${Buffer.byteLength(body)}\r\n` +
    `x-request-id: ${requestId}\r\n` +
    'Connection: close\r\n\r\n' +
    body
  );
}

/** Fastify `clientErrorHandler`: the envelope instead of Fastify's own answer, then close. */
export function clientErrorHandler(this: { log: FastifyBaseLogger }, error: Error & { code?: string }, socket: Socket): void {
  // A reset connection has nobody to answer (as in Fastify's default handler).
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const message = CLIENT_ERROR_MESSAGES[error.code ?? ''] ?? 'The request is not valid HTTP.';
  const requestId = randomUUID();
  this.log.debug({ err: error, requestId }, 'client error');
  if (socket.writable) socket.write(rawAnswer('VALIDATION_FAILED', message, requestId));
  socket.destroy();
}

/** An `Expect` other than 100-continue: Node would answer an empty 417. */
export function answerUnknownExpectations(server: Server): void {
  server.on('checkExpectation', (request: IncomingMessage, response: ServerResponse) => {
    const requestId = requestIdFor(request);
    const body = JSON.stringify(errorBody({ code: 'VALIDATION_FAILED', message: 'Unsupported Expect header.' }, requestId));
    response.writeHead(400, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(body),
      'x-request-id': requestId,
      connection: 'close',
    });
    response.end(body);
  });
}
