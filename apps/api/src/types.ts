import type { Sql } from '@quest/db';
import type { Allocator } from '@quest/queue';
import type { FastifyBaseLogger } from 'fastify';
import type { Redis } from 'ioredis';
import type { QuestAuthorizer } from './auth.ts';
import type { ApiConfig } from './env.ts';
import type { FeatureFlagCache } from './flags.ts';
import type { OwnerItemLimit } from './rate-limits.ts';
import type { ReadRouter } from './read-routing.ts';
import type { CommandBoundary } from './commands/boundary.ts';
import type { AllocationService } from './services/allocations.ts';
import type { BatchService } from './services/batches.ts';
import type { IdempotencyGuard } from './services/idempotency.ts';
import type { ReversalService } from './services/reversals.ts';
import type { WebhookService } from './services/webhooks.ts';

export type { ApiConfig } from './env.ts';

/** What the app is built from: live connections, created and closed by server.ts (or a test). */
export interface ApiDeps {
  sql: Sql;
  flags: FeatureFlagCache;
  allocator: Allocator;
  /** Key/quest ownership checks; an uncached one (a query per check) when omitted. */
  auth?: QuestAuthorizer;
  /**
   * Refuses a reused Idempotency-Key with a different body while the first is pending (server.ts
   * always gives one; tests of routes that take no Idempotency-Key may leave it out).
   */
  idempotency?: IdempotencyGuard;
  /** Redis shared by every API process for rate limits; limits are counted in this process without it. */
  redis?: Redis;
  /** Where the public reads go when DATABASE_READ_URL is set; `sql` (the primary) when omitted. */
  reads?: ReadRouter;
  /** Process logger (see createLogger); a fresh one at LOG_LEVEL when omitted. */
  logger?: FastifyBaseLogger;
}

/** What the routes see: buildApp fills in what ApiDeps leaves optional, and builds the services. */
export type RouteDeps = ApiDeps & {
  config: ApiConfig;
  auth: QuestAuthorizer;
  ownerItems: OwnerItemLimit;
  /** Every write command, whichever entry point asks (commands/boundary.ts). */
  commands: CommandBoundary;
  allocations: AllocationService;
  batches: BatchService;
  reversals: ReversalService;
  webhooks: WebhookService;
};
