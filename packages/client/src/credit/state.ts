import { QuestError } from '../errors.ts';
import { randomKey } from '../retry.ts';

/**
 * Where a creditMany run stands, as a small JSON value the caller stores (a file, a database row,
 * localStorage) and passes back to resume after a crash. It holds no rows: a resume reads the same
 * rows again, skips the `rowsDone` already reported, and re-sends the batches after them with the
 * same keys — a batch the service had already taken answers from its stored outcome (a replay).
 */
export interface CreditState {
  version: 1;
  questId: number;
  /** Every batch's Idempotency-Key is `<keyPrefix>:r<ordinal of its first row among valid rows>`. */
  keyPrefix: string;
  batchSize: number;
  /** Input rows whose results were reported, invalid ones included. */
  rowsDone: number;
  /** Batches whose results were reported. */
  batchesDone: number;
}

/** Keys are at most 255 characters: the prefix leaves room for `:r` and the row ordinal. */
export const MAX_KEY_PREFIX_LENGTH = 200;

const invalid = (message: string) => new QuestError('INVALID_STATE', message, { retryable: false });
const count = (n: unknown) => typeof n === 'number' && Number.isSafeInteger(n) && n >= 0;

/** The state a run starts from: the caller's (checked against the call), or a fresh one. */
export function startState(
  questId: number,
  o: { state?: CreditState | undefined; keyPrefix?: string | undefined; batchSize?: number | undefined },
  defaultBatchSize: number,
): CreditState {
  const s = o.state;
  if (s === undefined) {
    const keyPrefix = o.keyPrefix ?? `credit-many-${randomKey()}`;
    if (keyPrefix.length < 1 || keyPrefix.length > MAX_KEY_PREFIX_LENGTH)
      throw invalid(`keyPrefix must be 1 to ${MAX_KEY_PREFIX_LENGTH} characters`);
    return { version: 1, questId, keyPrefix, batchSize: o.batchSize ?? defaultBatchSize, rowsDone: 0, batchesDone: 0 };
  }
  if (s.version !== 1 || typeof s.keyPrefix !== 'string' || !count(s.rowsDone) || !count(s.batchesDone) || !(s.batchSize >= 1))
    throw invalid('not a creditMany state (version 1)');
  if (s.questId !== questId) throw invalid(`the state is of quest ${s.questId}, not ${questId}`);
  if (o.batchSize !== undefined && o.batchSize !== s.batchSize)
    throw invalid(`the state was made with batchSize ${s.batchSize}; resume with that size (or none)`);
  if (o.keyPrefix !== undefined && o.keyPrefix !== s.keyPrefix) throw invalid('the state was made with another keyPrefix');
  return { ...s };
}
