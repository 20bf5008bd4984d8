import { monotonicFactory } from 'ulidx';

const ulid = monotonicFactory();

export const ID_PREFIXES = ['own', 'key', 'pay', 'alc', 'bat'] as const;
export type IdPrefix = (typeof ID_PREFIXES)[number];

/** Prefixed, time-sortable identifier, e.g. `pay_01JF8Q…`. Lexical order follows creation time. */
export function newId(prefix: IdPrefix, now: number = Date.now()): string {
  return `${prefix}_${ulid(now).toLowerCase()}`;
}

export function hasPrefix(id: string, prefix: IdPrefix): boolean {
  return id.startsWith(`${prefix}_`);
}
