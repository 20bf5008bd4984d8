import { createHash } from 'node:crypto';
import { type BatchRow, getBatch, getBatchResults, insertBatch, type Sql } from '@quest/db';
import { DomainError, idempotentRequestKey, newId } from '@quest/domain';
import type { Allocator } from '@quest/queue';
import type { z } from 'zod';
import { countBatchItems } from '../metrics.ts';
import { batchResultView, batchSummary, type BatchView } from '../schemas/batches.ts';
import type { IdempotencyGuard } from '../services/idempotency.ts';
import { type Answer, type AnswerHeaders, refusal, success } from './answer.ts';
import type { Command, CommandContext } from './command.ts';
import { batchInput } from './inputs.ts';

export interface BatchCommandDeps {
  sql: Sql;
  allocator: Allocator;
  idempotency?: IdempotencyGuard | undefined;
  /** How long a POST waits for its batch to finish before answering 202. */
  waitMs: number;
  /** Most items one batch may hold (BATCH_MAX_ITEMS). */
  maxItems: number;
}

type Items = z.output<typeof batchInput>['items'];

function batchDigest(items: Items): string {
  const h = createHash('sha256');
  for (const i of items) h.update(`${i.address}:${i.points};`);
  return h.digest('hex');
}

/** IDEMPOTENCY_KEY_REUSED for a batch, telling the size of the batch stored under the key (a client re-cutting a file can name it). */
const keyReused = (stored: BatchRow | undefined) =>
  new DomainError('IDEMPOTENCY_KEY_REUSED', undefined, stored ? { total: stored.total } : undefined);

/** The batch's row, inserted now or by an earlier request with the same key (`replayed`), with the same items. */
async function storeBatch(deps: BatchCommandDeps, ctx: CommandContext, input: z.output<typeof batchInput>) {
  const { sql, idempotency } = deps;
  const { questId, items, idempotencyKey } = input;
  const batchId = idempotencyKey ? idempotentRequestKey(ctx.ownerId, questId, idempotencyKey, 'bat') : newId('bat');
  const digest = batchDigest(items);
  if (idempotencyKey && idempotency) {
    try {
      await idempotency.claim(batchId, digest);
    } catch (error) {
      if (!(error instanceof DomainError && error.code === 'IDEMPOTENCY_KEY_REUSED')) throw error;
      throw keyReused(await getBatch(sql, questId, batchId));
    }
  }
  const addresses = items.map((i) => i.address);
  const points = items.map((i) => i.points);
  const inserted = await insertBatch(sql, { id: batchId, questId, ownerId: ctx.ownerId, digest, addresses, points });
  const row = inserted ?? (await getBatch(sql, questId, batchId));
  if (!row) throw new Error(`batch ${batchId} exists for another quest`);
  if (row.items_digest !== digest) throw keyReused(row);
  return { row, replayed: inserted === undefined };
}

/**
 * The batch's final row, or undefined while it runs. Without the job's own reply (it timed out, was
 * lost, or another request's job carried the batch) the row is the truth: completed is final. A
 * failed row may be the previous attempt's, which this request's job is about to resume, so only
 * the job's own answer says failed.
 */
async function awaitBatch(deps: BatchCommandDeps, row: BatchRow, respondAsync: boolean) {
  if (row.status === 'completed') return { final: row, current: row };
  const reply = await deps.allocator.runBatch(
    { batchId: row.id, questId: row.quest_id },
    { waitMs: respondAsync ? 0 : deps.waitMs },
  );
  const current = (await getBatch(deps.sql, row.quest_id, row.id)) ?? row;
  return { final: reply || current.status === 'completed' ? current : undefined, current };
}

/** POST /quests/{questId}/batches and the console's CSV upload: the items stored, queued as one job, awaited. */
export function batchCommand(deps: BatchCommandDeps): Command<typeof batchInput, { batch: BatchView }> {
  return {
    input: batchInput,
    flag: 'quests',
    quest: (input) => input.questId,
    cost: (input) => input.items.length,
    check(input) {
      if (input.items.length > deps.maxItems)
        throw new DomainError(
          'BATCH_TOO_LARGE',
          `A batch holds at most ${deps.maxItems} allocations; this one has ${input.items.length}.`,
        );
    },
    async run(ctx, input): Promise<Answer<{ batch: BatchView }>> {
      const { row, replayed } = await storeBatch(deps, ctx, input);
      const { final, current } = await awaitBatch(deps, row, input.respondAsync);
      countBatchItems(final ?? row);
      const headers: AnswerHeaders = {
        ...(replayed ? { 'idempotent-replayed': 'true' } : {}),
        ...(!final && input.respondAsync ? { 'preference-applied': 'respond-async' } : {}),
      };
      if (final?.status === 'completed') {
        const results = await getBatchResults(deps.sql, row.id, final.total, 0);
        return success(200, { batch: { ...batchSummary(final), results: results.map(batchResultView) } }, headers);
      }
      if (final?.status === 'failed') {
        const { id: batchId, processed, total } = final;
        const message = `Batch ${batchId} stopped after ${processed} of ${total} items; retry with the same Idempotency-Key to resume.`;
        return refusal(new DomainError('ALLOCATION_FAILED', message, { batchId, processed }), headers);
      }
      return success(
        202,
        { batch: batchSummary(current) },
        { ...headers, location: `/quests/${row.quest_id}/batches/${row.id}` },
      );
    },
  };
}
