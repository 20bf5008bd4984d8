import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

/** Ids a client or proxy may choose: short, and safe to put in logs and headers as they are. */
const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Fastify genReqId: the caller's x-request-id when it is sane, else a fresh UUID. */
export function requestIdFor(req: IncomingMessage): string {
  const incoming = req.headers['x-request-id'];
  return typeof incoming === 'string' && SANE_REQUEST_ID.test(incoming) ? incoming : randomUUID();
}
