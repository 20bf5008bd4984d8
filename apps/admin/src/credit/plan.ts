import type { CreditCsvRow } from '../csv.ts';
import { type CreditItem, checkCreditRow, type FailedRow, invalidRow } from './rows.ts';

/**
 * Batch planning and the batches' Idempotency-Keys: what makes a re-run credit nothing twice.
 *
 * Invalid rows are set aside BEFORE batching, so batches consist of the valid rows only, in file
 * order, cut every --batch-size rows: the same file and batch size give the same batches, and the
 * same keys, on every run.
 */

/** Never change: a new scheme would give every batch a new key and credit old files again. */
export const KEY_SCHEME = 'quest-admin-credit-v1';

/**
 * Idempotency-Key of a batch: the file's SHA-256, the quest and the ordinal (among valid rows) of
 * the batch's first row. The batch size enters only through that ordinal, so batch 1 has the same
 * key whatever the size: a re-run with another size is refused by the service (same key, other
 * rows) rather than crediting the file twice.
 */
export function batchIdempotencyKey(k: { fileSha256: string; questId: number; batchSize: number; index: number }): string {
  return `${KEY_SCHEME}:${k.fileSha256}:q${k.questId}:r${k.index * k.batchSize}`;
}

export interface PlannedBatch {
  index: number;
  /** Valid rows, in file order; empty only for the last yield when invalid rows trail the last batch. */
  items: CreditItem[];
  /** Invalid rows met since the previous batch (lines before this batch's last row), in file order. */
  invalid: FailedRow[];
  /** File bytes parsed before this batch's first row and up to its last row (for progress by bytes). */
  bytesFrom: number;
  bytesTo: number;
}

/**
 * Cut the valid rows into batches of `batchSize`, setting invalid rows aside (code INVALID_ROW)
 * first, so numbering depends only on the file. Holds one batch at a time.
 */
export async function* planBatches(rows: AsyncIterable<CreditCsvRow>, batchSize: number): AsyncGenerator<PlannedBatch> {
  let index = 0;
  let items: CreditItem[] = [];
  let invalid: FailedRow[] = [];
  let bytesFrom = 0;
  let bytes = 0;
  for await (const row of rows) {
    bytes = row.bytes ?? bytes;
    const check = checkCreditRow(row);
    if (!check.ok) {
      invalid.push(invalidRow(row));
      continue;
    }
    items.push({ line: row.line, address: row.address, points: check.points, pointsText: row.points });
    if (items.length === batchSize) {
      yield { index: index++, items, invalid, bytesFrom, bytesTo: bytes };
      items = [];
      invalid = [];
      bytesFrom = bytes;
    }
  }
  if (items.length > 0 || invalid.length > 0) yield { index, items, invalid, bytesFrom, bytesTo: bytes };
}

/** Rows a batch accounts for: its items and the invalid rows before them. */
export const rowsOf = (b: PlannedBatch) => b.items.length + b.invalid.length;
