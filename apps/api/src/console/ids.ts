import { DomainError } from '@quest/domain';
import type { FastifyRequest } from 'fastify';

/**
 * The ids in console paths, each by its route parameter's name: what a well-formed one looks like,
 * and what a malformed one is answered as (the same as a well-formed id that does not exist).
 */
const IDS = {
  questId: { pattern: /^[1-9]\d{0,8}$/, missing: () => new DomainError('QUEST_NOT_FOUND') },
  payoutId: { pattern: /^pay_[A-Za-z0-9_-]{1,100}$/, missing: () => new DomainError('PAYOUT_NOT_FOUND') },
  batchId: { pattern: /^bat_[A-Za-z0-9_-]{1,100}$/, missing: () => new DomainError('BATCH_NOT_FOUND') },
  endpointId: { pattern: /^whe_[A-Za-z0-9_-]{1,100}$/, missing: () => new DomainError('WEBHOOK_ENDPOINT_NOT_FOUND') },
  ownerId: { pattern: /^own_[A-Za-z0-9_-]{1,100}$/, missing: () => new DomainError('VALIDATION_FAILED', 'No such owner.') },
  keyId: { pattern: /^key_[A-Za-z0-9_-]{1,100}$/, missing: () => new DomainError('VALIDATION_FAILED', 'No such API key.') },
} as const;

export type IdParam = keyof typeof IDS;

/** The value of a path's id parameter if it is one (undefined otherwise): for links, never for lookups. */
export function idOf(request: FastifyRequest, name: IdParam): string | undefined {
  const value = (request.params as Record<string, unknown> | undefined)?.[name];
  return typeof value === 'string' && IDS[name].pattern.test(value) ? value : undefined;
}

/** A path's id parameter; a malformed one is answered as the thing not found. */
export function pathId(request: FastifyRequest, name: Exclude<IdParam, 'questId'>): string {
  const id = idOf(request, name);
  if (id === undefined) throw IDS[name].missing();
  return id;
}

/** A path's quest id, as the number it is. */
export function pathQuestId(request: FastifyRequest): number {
  const id = idOf(request, 'questId');
  if (id === undefined) throw IDS.questId.missing();
  return Number(id);
}
