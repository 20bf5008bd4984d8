import { STATUS_CODES } from 'node:http';
import { classifyDbError } from '@quest/db';
import { isAdminError } from '@quest/db/admin-errors';
import { DEFAULT_MESSAGE, type ErrorCode, type ErrorResponse, isDomainError, STATUS_BY_CODE } from '@quest/domain';
import type { FastifyReply, FastifyRequest } from 'fastify';

/**
 * The one place errors become HTTP responses. Every non-2xx body is an ErrorResponse envelope:
 * DomainErrors carry their own code; framework errors (validation, body parsing, routing) are
 * mapped by kind; a lost database connection is 503; anything else is a bug: 500 with a generic
 * message, logged with the request id, never leaking internals.
 */

export interface ValidationIssue {
  /** Which part of the request: params, querystring, headers or body. */
  location: string;
  /** Dotted path inside it, e.g. `limit` or `items.3.address`; empty for the part as a whole. */
  path: string;
  code: string;
  message: string;
}

export interface MappedError {
  code: ErrorCode;
  message: string;
  details?: unknown;
}

interface FrameworkErrorLike {
  code?: unknown;
  statusCode?: unknown;
  message?: unknown;
  validation?: unknown;
  validationContext?: unknown;
}

const FASTIFY_CODES: Record<string, MappedError> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: { code: 'UNSUPPORTED_MEDIA_TYPE', message: DEFAULT_MESSAGE.UNSUPPORTED_MEDIA_TYPE },
  FST_ERR_CTP_BODY_TOO_LARGE: { code: 'PAYLOAD_TOO_LARGE', message: DEFAULT_MESSAGE.PAYLOAD_TOO_LARGE },
  FST_ERR_CTP_EMPTY_JSON_BODY: {
    code: 'VALIDATION_FAILED',
    message: 'The body is empty but the content type is application/json.',
  },
  FST_ERR_CTP_INVALID_JSON_BODY: { code: 'VALIDATION_FAILED', message: 'The body is not valid JSON.' },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: {
    code: 'VALIDATION_FAILED',
    message: 'The body size does not match the Content-Length header.',
  },
};

/**
 * PostgreSQL's "invalid text representation" class: a value the client sent that the database
 * cannot take as text or as the column's type (22021: a NUL byte or bad UTF-8; 22P02: e.g. not a
 * number). Routes validate their inputs first; this keeps any value that slips through a 400.
 */
const INVALID_TEXT_SQLSTATES = new Set(['22021', '22P02']);

/** Client errors the framework raises by status alone (4xx it has no specific code for here). */
const CODE_BY_CLIENT_STATUS: Record<number, ErrorCode> = {
  404: 'ROUTE_NOT_FOUND',
  405: 'METHOD_NOT_ALLOWED',
  413: 'PAYLOAD_TOO_LARGE',
  415: 'UNSUPPORTED_MEDIA_TYPE',
  429: 'RATE_LIMITED',
};

/** At most this many validation issues are reported in `details`; the message says how many there were. */
export const MAX_REPORTED_ISSUES = 100;
/** Issues named in the message itself (the rest are in `details`). */
const ISSUES_IN_MESSAGE = 3;
const MAX_ISSUE_MESSAGE_LENGTH = 200;

function issueMessage(keyword: unknown, message: unknown): string {
  // zod names unknown keys in its message; a client's key names are not echoed back (size, logs).
  if (keyword === 'unrecognized_keys') return 'has keys that are not allowed';
  if (typeof message !== 'string') return 'is invalid';
  return message.length > MAX_ISSUE_MESSAGE_LENGTH ? `${message.slice(0, MAX_ISSUE_MESSAGE_LENGTH)}…` : message;
}

interface RawIssue {
  instancePath?: unknown;
  keyword?: unknown;
  message?: unknown;
  params?: { minimum?: unknown; maximum?: unknown };
}

/** True when `a` states a tighter bound than `b` (a larger minimum, a smaller maximum). */
function tighter(a: RawIssue, b: RawIssue): boolean {
  const [x, y] = a.keyword === 'too_small' ? [a.params?.minimum, b.params?.minimum] : [b.params?.maximum, a.params?.maximum];
  return typeof x === 'number' && typeof y === 'number' && x > y;
}

/**
 * One issue per field and kind: zod reports a number's bound twice when `.int()` (the safe-integer
 * range) and `.min()`/`.max()` both fail, e.g. for 1e20. The bound kept is the one that binds.
 */
export function distinctIssues(validation: readonly unknown[]): unknown[] {
  const kept = new Map<string, RawIssue>();
  for (const raw of validation) {
    const issue = (typeof raw === 'object' && raw !== null ? raw : {}) as RawIssue;
    const key = `${String(issue.instancePath)}\u0000${String(issue.keyword)}`;
    const seen = kept.get(key);
    if (!seen || ((issue.keyword === 'too_small' || issue.keyword === 'too_big') && tighter(issue, seen))) kept.set(key, issue);
  }
  return [...kept.values()];
}

function validationIssues(validation: unknown[], location: string): ValidationIssue[] {
  return validation.slice(0, MAX_REPORTED_ISSUES).map((raw) => {
    const issue = raw as { instancePath?: unknown; keyword?: unknown; message?: unknown };
    const pointer = typeof issue.instancePath === 'string' ? issue.instancePath : '';
    return {
      location,
      path: pointer.split('/').filter(Boolean).join('.'),
      code: typeof issue.keyword === 'string' ? issue.keyword : 'invalid',
      message: issueMessage(issue.keyword, issue.message),
    };
  });
}

/** Decide the code, message and details of the response to an error. */
export function mapError(error: unknown): MappedError {
  if (isDomainError(error)) {
    return error.details === undefined
      ? { code: error.code, message: error.message }
      : { code: error.code, message: error.message, details: error.details };
  }
  // An operator's write refused by @quest/db's checks (the console's operator views).
  if (isAdminError(error)) {
    const code: ErrorCode =
      error.code === 'QUEST_NOT_FOUND' || error.code === 'CAMPAIGN_NOT_FOUND' || error.code === 'WEBHOOK_ENDPOINT_NOT_FOUND'
        ? error.code
        : 'VALIDATION_FAILED';
    return { code, message: error.message };
  }
  const e = (typeof error === 'object' && error !== null ? error : {}) as FrameworkErrorLike;
  if (Array.isArray(e.validation)) {
    const distinct = distinctIssues(e.validation);
    const issues = validationIssues(distinct, typeof e.validationContext === 'string' ? e.validationContext : 'request');
    const summary = issues
      .slice(0, ISSUES_IN_MESSAGE)
      .map((i) => `${i.path ? `${i.location}.${i.path}` : i.location}: ${i.message}`)
      .join('; ');
    const total = distinct.length;
    const more =
      total <= ISSUES_IN_MESSAGE
        ? ''
        : ` (${total} issues in all; ${total > MAX_REPORTED_ISSUES ? `the first ${MAX_REPORTED_ISSUES}` : 'all'} in details)`;
    return { code: 'VALIDATION_FAILED', message: `Invalid request: ${summary}${more}`, details: issues };
  }
  const known = typeof e.code === 'string' ? FASTIFY_CODES[e.code] : undefined;
  if (known) return known;
  if (typeof e.code === 'string' && INVALID_TEXT_SQLSTATES.has(e.code) && typeof e.statusCode !== 'number')
    return { code: 'VALIDATION_FAILED', message: 'The request contains a value that is not valid text for its field.' };
  if (typeof e.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
    const code = CODE_BY_CLIENT_STATUS[e.statusCode] ?? 'VALIDATION_FAILED';
    // Client errors raised by the framework describe the request, not the server: safe to show.
    return { code, message: typeof e.message === 'string' && e.message ? e.message : DEFAULT_MESSAGE[code] };
  }
  // An outage, or a database misconfigured for now (a missing table): unavailable, not a bug of this request.
  const kind = classifyDbError(error);
  if (kind === 'transient' || kind === 'configuration')
    return { code: 'DATABASE_UNAVAILABLE', message: DEFAULT_MESSAGE.DATABASE_UNAVAILABLE };
  return { code: 'INTERNAL_ERROR', message: DEFAULT_MESSAGE.INTERNAL_ERROR };
}

export function errorBody(mapped: MappedError, requestId: string): ErrorResponse {
  const statusCode = STATUS_BY_CODE[mapped.code];
  const body: ErrorResponse = {
    statusCode,
    error: STATUS_CODES[statusCode] ?? 'Error',
    code: mapped.code,
    message: mapped.message,
    requestId,
  };
  if (mapped.details !== undefined) body.details = mapped.details;
  return body;
}

/**
 * How much of an unread request body is read and thrown away after an early answer before the
 * connection is closed instead (see `drainUnreadBody`).
 */
export const DRAIN_LIMIT_BYTES = 64 * 1024 * 1024;

/**
 * An answer given before the request body was read (over the body limit, or not JSON): keep the
 * connection and read the rest of the body into nothing, so the client can finish its upload and
 * then read the answer. Fastify asks for `Connection: close` here, but closing a socket that still
 * has unread input makes the kernel send a reset, which can destroy the answer before the client
 * has read it: `curl --data-binary @big.json` then prints "connection reset" instead of the error
 * envelope, and whether a client sees the answer is a race. This is the "lingering close" every
 * production HTTP server does (nginx drains the same way). Memory stays flat (nothing is kept), and
 * a body declared larger than the drain limit is not worth reading: that connection is closed.
 */
function drainUnreadBody(request: FastifyRequest, reply: FastifyReply): void {
  const raw = request.raw;
  if (raw.complete || raw.destroyed) return;
  const declared = Number(raw.headers['content-length']);
  if (Number.isFinite(declared) && declared > DRAIN_LIMIT_BYTES) return;
  reply.removeHeader('connection');
  // Also when the client asked for `Connection: close`: it closes once it has the answer, and the
  // connection ends cleanly from its side instead of by a reset from ours.
  reply.raw.shouldKeepAlive = true;
  let drained = 0;
  raw.on('data', (chunk: Buffer) => {
    drained += chunk.length;
    if (drained > DRAIN_LIMIT_BYTES) raw.socket?.destroy();
  });
  raw.resume();
}

export function sendError(request: FastifyRequest, reply: FastifyReply, mapped: MappedError): FastifyReply {
  // Any answer given before the body was read (too large, not JSON, nested too deep): a no-op otherwise.
  drainUnreadBody(request, reply);
  const body = errorBody(mapped, request.id);
  reply.code(body.statusCode).header('x-request-id', request.id).type('application/json; charset=utf-8');
  if (body.statusCode === 503) reply.header('retry-after', '1');
  return reply.send(body);
}

/** Fastify error handler (set once on the root instance, inherited by every route plugin). */
export function handleError(error: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const mapped = mapError(error);
  const status = STATUS_BY_CODE[mapped.code];
  if (mapped.code === 'INTERNAL_ERROR') request.log.error({ err: error }, 'request failed with an unexpected error');
  // pino's err serializer appends the error's cause (the Redis or database error underneath) to
  // its message and stack: logged for operators, never answered.
  else if (status >= 500) request.log.warn({ err: error, code: mapped.code }, 'request failed: dependency unavailable');
  else request.log.debug({ code: mapped.code, message: mapped.message }, 'request rejected');
  return sendError(request, reply, mapped);
}

export function handleNotFound(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const path = request.url.split('?', 1)[0];
  return sendError(request, reply, { code: 'ROUTE_NOT_FOUND', message: `No route ${request.method} ${path}.` });
}
