import { getBatch, getBatchResults, type Sql } from '@quest/db';
import { DomainError } from '@quest/domain';
import { batchResultView, batchSummary, type BatchView } from '../schemas/batches.ts';

/** A batch's read: its progress and a page of its results (its write is commands/batch.ts). */
export class BatchService {
  constructor(private readonly sql: Sql) {}

  /** A batch, its progress, and a page of its results. */
  async get(questId: number, batchId: string, page: { limit: number; offset: number }): Promise<BatchView> {
    const row = await getBatch(this.sql, questId, batchId);
    if (!row) throw new DomainError('BATCH_NOT_FOUND');
    const results = await getBatchResults(this.sql, batchId, page.limit, page.offset);
    return { ...batchSummary(row), results: results.map(batchResultView) };
  }
}
