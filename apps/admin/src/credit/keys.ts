/**
 * The batches' Idempotency-Keys: what makes a re-run of the same file credit nothing twice.
 *
 * The client cuts the valid rows of the file into batches of --batch-size, in file order, and keys
 * batch k `<prefix>:r<k × batch size>` (the ordinal of its first row among valid rows): the same
 * file and batch size give the same batches, and the same keys, on every run.
 */

/** Never change: a new scheme would give every batch a new key and credit old files again. */
export const KEY_SCHEME = 'quest-admin-credit-v1';

/**
 * The prefix of a file's keys: the file's SHA-256 and the quest. The batch size enters only through
 * the ordinal of a batch's first row, so batch 1 has the same key whatever the size: a re-run with
 * another size is refused by the service (same key, other rows) rather than crediting the file twice.
 */
export const creditKeyPrefix = (k: { fileSha256: string; questId: number }) => `${KEY_SCHEME}:${k.fileSha256}:q${k.questId}`;
