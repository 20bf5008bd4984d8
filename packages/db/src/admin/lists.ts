import { AdminError } from './errors.ts';

/**
 * Lists for operators: one page at a time, in id order, continued after the last id seen (keyset
 * pagination: a page costs the same however deep it is, and rows created meanwhile are not skipped
 * or repeated). Each concern's module has its own list function; this is what they share.
 */

export const MAX_LIST_LIMIT = 1000;

export interface ListPage<T> {
  items: T[];
  /** Pass as `after` for the next page; null when this page is the last. */
  next: string | number | null;
}

export interface ListOptions<Cursor> {
  /** Rows per page, 1 to MAX_LIST_LIMIT. */
  limit: number;
  /** Only rows with a greater id. */
  after?: Cursor;
}

export function checkLimit(limit: number): void {
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIST_LIMIT)
    throw new AdminError('INVALID_INPUT', `limit must be 1 to ${MAX_LIST_LIMIT}`);
}

/** The page of `rows`, fetched with `limit + 1` so that one extra row tells whether more follow. */
export function page<R, T extends { id: string | number }>(rows: R[], limit: number, map: (row: R) => T): ListPage<T> {
  const items = rows.slice(0, limit).map(map);
  return { items, next: rows.length > limit ? items[items.length - 1]!.id : null };
}
