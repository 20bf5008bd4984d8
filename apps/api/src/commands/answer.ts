import type { DomainError } from '@quest/domain';
import type { FastifyReply } from 'fastify';

/** Response headers a command's answer carries (`idempotent-replayed`, `location`, …). */
export type AnswerHeaders = Readonly<Record<string, string>>;

/**
 * What a write command answers, whichever entry point asked: the status and body it succeeded with,
 * or the error it was refused with. Both carry headers, since a replayed rejection is marked too.
 */
export type Answer<B> =
  | { ok: true; status: 200 | 202; body: B; headers: AnswerHeaders }
  | { ok: false; error: DomainError; headers: AnswerHeaders };

export const success = <B>(status: 200 | 202, body: B, headers: AnswerHeaders = {}): Answer<B> => ({
  ok: true,
  status,
  body,
  headers,
});

export const refusal = (error: DomainError, headers: AnswerHeaders = {}): Answer<never> => ({ ok: false, error, headers });

/** `Idempotent-Replayed: true` on an answer that replays an earlier outcome for the client's key. */
export const replayedHeaders = (replayed: boolean | undefined): AnswerHeaders =>
  replayed ? { 'idempotent-replayed': 'true' } : {};

/** The body of a successful answer; a refusal is thrown as its error (the caller's error handler renders it). */
export function bodyOf<B>(answer: Answer<B>): { status: 200 | 202; body: B } {
  if (!answer.ok) throw answer.error;
  return { status: answer.status, body: answer.body };
}

/** An answer as HTTP: the JSON routes' one way to send what a command decided. */
export function sendAnswer<B>(reply: FastifyReply, answer: Answer<B>): FastifyReply {
  for (const [name, value] of Object.entries(answer.headers)) reply.header(name, value);
  const { status, body } = bodyOf(answer);
  return reply.code(status).send(body);
}
