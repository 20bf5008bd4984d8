import { checkCreditRow, type CreditRow } from './rows.ts';

/**
 * Cutting the input into batches, and the batches' Idempotency-Keys: what makes a resumed or
 * repeated run credit nothing twice.
 *
 * Invalid rows are set aside before batching, so batches hold valid rows only, in input order, cut
 * every `batchSize` of them: the same rows and batch size give the same batches, and the same keys.
 */

export interface InvalidRow<R> {
  row: R;
  reason: string;
  /** 0-based position in the input. */
  position: number;
}

export interface PlannedBatch<R> {
  /** The batch's ordinal in the run (0-based; a resumed run continues the numbering). */
  index: number;
  /** Valid rows, in input order; empty only for a last group of invalid rows after the last batch. */
  rows: R[];
  points: number[];
  /** Input positions of `rows`. */
  positions: number[];
  /** Invalid rows met since the previous batch, in input order. */
  invalid: InvalidRow<R>[];
  /** Input rows consumed up to this batch's last row, its invalid ones included. */
  rowsTo: number;
}

/**
 * Idempotency-Key of batch `index`: the run's prefix and the ordinal (among valid rows) of the
 * batch's first row. The batch size enters only through that ordinal, so batch 0 has the same key
 * whatever the size: a repeat with another size is refused by the service (same key, other rows)
 * rather than crediting twice.
 */
export const batchKey = (prefix: string, index: number, batchSize: number) => `${prefix}:r${index * batchSize}`;

/** Iterables, async iterables, and web ReadableStreams (not async-iterable in every browser). */
export type RowSource<R> = Iterable<R> | AsyncIterable<R> | ReadableStream<R>;

const isIterable = <R>(s: RowSource<R>): s is Iterable<R> | AsyncIterable<R> => Symbol.asyncIterator in s || Symbol.iterator in s;

async function* rowsOf<R>(source: RowSource<R>): AsyncGenerator<R> {
  if (isIterable(source)) {
    yield* source;
    return;
  }
  // Where ReadableStream is async-iterable (Node) it never gets here: TypeScript then calls this never.
  const reader = (source as ReadableStream<R>).getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      yield value;
    }
  } finally {
    reader.releaseLock();
  }
}

/**
 * Batches of `batchSize` valid rows, skipping the first `skipRows` input rows (done before a
 * resume) and numbering from `firstIndex`. Holds one batch at a time.
 */
export async function* planBatches<R extends CreditRow>(
  source: RowSource<R>,
  o: { batchSize: number; skipRows: number; firstIndex: number },
): AsyncGenerator<PlannedBatch<R>> {
  let index = o.firstIndex;
  let position = 0;
  const next = (): PlannedBatch<R> => ({ index, rows: [], points: [], positions: [], invalid: [], rowsTo: 0 });
  let batch = next();
  for await (const row of rowsOf(source)) {
    const at = position++;
    if (at < o.skipRows) continue;
    const check = checkCreditRow(row);
    if (!check.ok) {
      batch.invalid.push({ row, reason: check.reason, position: at });
      continue;
    }
    batch.rows.push(row);
    batch.points.push(check.points);
    batch.positions.push(at);
    if (batch.rows.length === o.batchSize) {
      batch.rowsTo = position;
      yield batch;
      index++;
      batch = next();
    }
  }
  if (batch.rows.length > 0 || batch.invalid.length > 0) {
    batch.rowsTo = position;
    yield batch;
  }
}
