export { type AllocateOutcome, type AllocateRequest, DEFAULT_ALLOCATE_DEADLINE_MS } from './allocate.ts';
export { createQuestClient, type Page, type QuestClient } from './client.ts';
export { DEFAULT_REVERSE_DEADLINE_MS, type ReverseOutcome, type ReverseRequest } from './reverse.ts';
export type { EventsPage, EventsQuery } from './events.ts';
export type { StallPolicy } from './credit/batch.ts';
export {
  type BatchInfo,
  CreditBatchError,
  type CreditBatchReport,
  type CreditEvent,
  type CreditManyOptions,
  type CreditRowResult,
  DEFAULT_CREDIT_BATCH_SIZE,
  DEFAULT_CREDIT_CONCURRENCY,
  DEFAULT_STALL,
  MAX_CREDIT_BATCH_SIZE,
  MAX_CREDIT_CONCURRENCY,
} from './credit/many.ts';
export { batchKey as creditBatchKey, type RowSource } from './credit/plan.ts';
export { checkCreditRow, type CreditRow, type RowCheck } from './credit/rows.ts';
export { type CreditState, MAX_KEY_PREFIX_LENGTH } from './credit/state.ts';
export { type ClientErrorCode, QuestError } from './errors.ts';
export { DEFAULT_RETRY, type RetryPolicy } from './retry.ts';
export { DEFAULT_REQUEST_TIMEOUT_MS, type QuestClientOptions, type RetryEvent } from './transport.ts';
export * from './types.ts';
export { type WebhookHeaders, WebhookVerificationError, verify as verifyWebhook, webhooks } from './webhooks.ts';
