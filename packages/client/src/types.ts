import type { components, paths } from '../generated/openapi.ts';

/**
 * Named types of the API, taken from the generated OpenAPI types (generated/openapi.ts) so they
 * cannot drift from the served document.
 */

export type { components, paths };

type Schemas = components['schemas'];
export type Payout = Schemas['Payout'];
export type QuestDetail = Schemas['QuestDetail'];
export type PublicQuest = Schemas['PublicQuest'];
export type Campaign = Schemas['Campaign'];
export type Allocation = Schemas['Allocation'];
export type Batch = Schemas['Batch'];
export type BatchResult = Schemas['BatchResult'];
export type Reversal = Schemas['Reversal'];
export type ReversalStatus = Schemas['ReversalStatus'];
export type PayoutDetail = Schemas['PayoutDetail'];
export type Event = Schemas['Event'];
export type ErrorCode = Schemas['ErrorCode'];
export type ErrorResponse = Schemas['ErrorResponse'];

/**
 * The codes of a decision that refuses a credit: the request was valid and the service decided
 * not to credit it (a replay of it gets the same answer). `satisfies` ties them to the generated
 * enum: a code the API stops sending fails the typecheck here.
 */
export const REJECTION_CODES = [
  'QUEST_NOT_ACTIVE',
  'ACTION_TYPE_INACTIVE',
  'INSUFFICIENT_POINTS',
  'ACCOUNT_NOT_FOUND',
  'BALANCE_LIMIT_EXCEEDED',
] as const satisfies readonly ErrorCode[];
export type RejectionCode = (typeof REJECTION_CODES)[number];

export const isRejectionCode = (code: unknown): code is RejectionCode =>
  typeof code === 'string' && (REJECTION_CODES as readonly string[]).includes(code);

/**
 * The codes of a decision that refuses a reversal: nothing left of the payout, more points than
 * are left, or no such payout in the quest (a replay of it gets the same answer).
 */
export const REVERSAL_REJECTION_CODES = [
  'PAYOUT_ALREADY_REVERSED',
  'REVERSAL_EXCEEDS_PAYOUT',
  'PAYOUT_NOT_FOUND',
] as const satisfies readonly ErrorCode[];
export type ReversalRejectionCode = (typeof REVERSAL_REJECTION_CODES)[number];

export const isReversalRejectionCode = (code: unknown): code is ReversalRejectionCode =>
  typeof code === 'string' && (REVERSAL_REJECTION_CODES as readonly string[]).includes(code);
