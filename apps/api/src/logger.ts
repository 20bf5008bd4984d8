import type { LOG_LEVELS } from '@quest/config';
import { type DestinationStream, type Logger, pino } from 'pino';

/**
 * Censored wherever they appear in a log line. Nothing logs headers today; this keeps an API key
 * out of the logs even when someone adds a serializer or logs a request object.
 */
export const REDACTED_PATHS = [
  'headers["x-api-key"]',
  'req.headers["x-api-key"]',
  'request.headers["x-api-key"]',
  '*.headers["x-api-key"]',
  'headers.authorization',
  'req.headers.authorization',
  '*.headers.authorization',
];

/** The process logger; Fastify derives one child per request from it (bound to the request id). */
export function createLogger(level: (typeof LOG_LEVELS)[number], destination?: DestinationStream): Logger {
  const options = { level, redact: { paths: REDACTED_PATHS, censor: '[redacted]' } };
  return destination ? pino(options, destination) : pino(options);
}
