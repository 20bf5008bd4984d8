import { DomainError } from '@quest/domain';
import { errorCodes, type FastifyInstance } from 'fastify';

/**
 * How deep a request body's arrays and objects may nest. The deepest documented body is three
 * levels (`{"allocations":[{…}]}`); 32 leaves room without letting a body of nested `[` cost the
 * parser and the validator time and memory in proportion to its depth.
 */
export const MAX_JSON_DEPTH = 32;

/**
 * Tracks the nesting depth of JSON text fed to it in chunks (bytes: every structural character is
 * ASCII and never part of a multi-byte UTF-8 sequence). Hand-written because no maintained JSON
 * parser for Node takes a depth limit: one linear pass, skipping strings and their escapes, far
 * cheaper than JSON.parse. Invalid JSON is left for the parser to refuse.
 */
export class JsonDepthScanner {
  #depth = 0;
  #inString = false;
  #escaped = false;
  constructor(readonly max: number = MAX_JSON_DEPTH) {}

  /** Feed the next chunk; true once the text has opened more than `max` nested arrays or objects. */
  exceeded(chunk: Uint8Array | string): boolean {
    const text = typeof chunk === 'string';
    for (let i = 0; i < chunk.length; i++) {
      const c = text ? (chunk as string).charCodeAt(i) : (chunk as Uint8Array)[i]!;
      if (this.#inString) {
        if (this.#escaped) this.#escaped = false;
        else if (c === 0x5c) this.#escaped = true;
        else if (c === 0x22) this.#inString = false;
      } else if (c === 0x22) this.#inString = true;
      else if (c === 0x5b || c === 0x7b) {
        if (++this.#depth > this.max) return true;
      } else if (c === 0x5d || c === 0x7d) this.#depth--;
    }
    return false;
  }
}

export function jsonDepthExceeds(text: string, max: number = MAX_JSON_DEPTH): boolean {
  return new JsonDepthScanner(max).exceeded(text);
}

/**
 * Replace Fastify's JSON body parser by the same parser (prototype-poisoning protection included)
 * behind a depth check made while the body arrives: a body nested deeper than MAX_JSON_DEPTH is a
 * 400 as soon as its 33rd opening bracket is read, and the rest of it is never kept in memory (the
 * error answer drains it, see errors.ts). Body limit and Content-Length checks are Fastify's own
 * (same errors), since a parser that takes the stream does them itself.
 */
export function useDepthLimitedJsonParser(app: FastifyInstance): void {
  const parse = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', (request, payload, done) => {
    const limit = request.routeOptions.bodyLimit ?? app.initialConfig.bodyLimit ?? 1024 * 1024;
    const declared = Number(request.headers['content-length']);
    if (declared > limit) {
      done(new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE(), undefined);
      return;
    }
    const scanner = new JsonDepthScanner();
    const chunks: Buffer[] = [];
    let received = 0;
    const stop = (error: Error) => {
      payload.off('data', onData);
      payload.off('end', onEnd);
      payload.off('error', onEnd);
      payload.pause();
      done(error, undefined);
    };
    const onData = (chunk: Buffer | string) => {
      const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
      received += bytes.length;
      if (received > limit) return stop(new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE());
      if (scanner.exceeded(bytes)) {
        return stop(
          new DomainError('VALIDATION_FAILED', `The body nests arrays or objects deeper than ${MAX_JSON_DEPTH} levels.`),
        );
      }
      chunks.push(bytes);
    };
    const onEnd = (error?: Error) => {
      payload.off('data', onData);
      payload.off('end', onEnd);
      payload.off('error', onEnd);
      if (error) return done(Object.assign(error, { statusCode: 400 }), undefined);
      if (!Number.isNaN(declared) && received !== declared)
        return done(new errorCodes.FST_ERR_CTP_INVALID_CONTENT_LENGTH(), undefined);
      parse(request, Buffer.concat(chunks, received).toString('utf8'), done);
    };
    payload.on('data', onData);
    payload.on('end', onEnd);
    payload.on('error', onEnd);
    payload.resume();
  });
}
