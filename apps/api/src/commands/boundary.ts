import type { Sql } from '@quest/db';
import type { Allocator } from '@quest/queue';
import type { z } from 'zod';
import type { FeatureFlagCache } from '../flags.ts';
import type { OwnerItemLimit } from '../rate-limits.ts';
import type { IdempotencyGuard } from '../services/idempotency.ts';
import { RequestPipeline } from './pipeline.ts';
import type { Answer } from './answer.ts';
import { batchCommand } from './batch.ts';
import type { Caller } from './caller.ts';
import type { Command } from './command.ts';
import { creditCommand } from './credit.ts';
import { reverseCommand } from './reversal.ts';
import type { BatchInput, CreateEndpointInput, CreditInput, EndpointInput, ReplayInput, ReverseInput } from './inputs.ts';
import { type WebhookCommandDeps, webhookCommands } from './webhooks.ts';

export interface BoundaryDeps {
  sql: Sql;
  allocator: Allocator;
  idempotency?: IdempotencyGuard | undefined;
  flags: FeatureFlagCache;
  ownerItems: OwnerItemLimit;
  webhooks: Omit<WebhookCommandDeps, 'sql'>;
  /** BATCH_WAIT_MS and BATCH_MAX_ITEMS. */
  batches: { waitMs: number; maxItems: number };
}

/**
 * A zod failure as the framework's own validation error, so the one error mapper (errors.ts) answers
 * a console form's bad field exactly as it answers a JSON body's: 400 VALIDATION_FAILED with details.
 */
function validationError(error: z.ZodError): Error {
  const validation = error.issues.map((issue) => ({
    instancePath: issue.path.length ? `/${issue.path.join('/')}` : '',
    keyword: issue.code,
    message: issue.message,
  }));
  return Object.assign(new Error('invalid command input'), { validation, validationContext: 'body' });
}

/**
 * The one boundary every write command passes, whichever entry point asks (a JSON route, a console
 * page, `quest-admin` through the routes): its input validated, its feature switch, the caller
 * authorised for its quest (or account), its size limits, the owner's rate budget charged, then
 * run and answered. Entry points hold no write service, only this, so none can skip a check.
 */
function buildCommands(deps: BoundaryDeps) {
  const pipeline = new RequestPipeline(deps);
  return {
    credit: creditCommand(pipeline),
    reverse: reverseCommand({ sql: deps.sql, pipeline }),
    createBatch: batchCommand({ ...deps, ...deps.batches }),
    ...webhookCommands({ sql: deps.sql, ...deps.webhooks }),
  };
}

export type Commands = ReturnType<typeof buildCommands>;

export class CommandBoundary {
  readonly #deps: BoundaryDeps;
  /** The commands by name (tests check every one of them). */
  readonly commands: Commands;

  constructor(deps: BoundaryDeps) {
    this.#deps = deps;
    this.commands = buildCommands(deps);
  }

  credit = (caller: Caller, input: CreditInput) => this.#execute(this.commands.credit, caller, input);
  reverse = (caller: Caller, input: ReverseInput) => this.#execute(this.commands.reverse, caller, input);
  createBatch = (caller: Caller, input: BatchInput) => this.#execute(this.commands.createBatch, caller, input);
  createEndpoint = (caller: Caller, input: CreateEndpointInput) => this.#execute(this.commands.createEndpoint, caller, input);
  deleteEndpoint = (caller: Caller, input: EndpointInput) => this.#execute(this.commands.deleteEndpoint, caller, input);
  rotateSecret = (caller: Caller, input: EndpointInput) => this.#execute(this.commands.rotateSecret, caller, input);
  replayEvents = (caller: Caller, input: ReplayInput) => this.#execute(this.commands.replayEvents, caller, input);

  async #execute<S extends z.ZodType, B>(command: Command<S, B>, caller: Caller, raw: z.input<S>): Promise<Answer<B>> {
    const parsed = command.input.safeParse(raw);
    if (!parsed.success) throw validationError(parsed.error);
    const input = parsed.data;
    if (command.flag) this.#deps.flags.require(command.flag);
    const questId = command.quest(input);
    const ownerId = questId === null ? await caller.owner() : await caller.questOwner(questId);
    command.check?.(input);
    const cost = command.cost(input);
    if (cost > 0) await this.#deps.ownerItems.charge(caller.headers, ownerId, cost);
    return command.run({ ownerId, requestId: caller.requestId }, input);
  }
}
