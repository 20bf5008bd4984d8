import { InvalidArgumentError } from 'commander';
import { MAX_LIST_LIMIT } from '@quest/db/lists';
import { isWellFormedApiKey } from '@quest/domain/keys';
import { ACTION_STATUSES, type ActionStatus } from '@quest/domain/quest';

/**
 * Parsers for command-line values. Each throws commander's InvalidArgumentError, so a bad value
 * becomes a usage error naming the option, never a stack trace.
 *
 * They run while the command line is parsed, before a command is chosen: like the rest of the
 * start-up path (main.ts, program.ts) they import only modules that load no heavy package (no
 * postgres, BullMQ, ioredis), so `--help`, `--version` and a usage error answer at once.
 */

const INT4_MAX = 2_147_483_647;

// Calendar date, optionally followed by a time; a time needs an explicit zone, so the instant
// does not depend on the operator's machine.
const ISO_INSTANT = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2}))?$/i;

function daysInMonth(year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate();
}

/** ISO 8601 instant: `2025-06-01` (midnight UTC) or `2025-06-01T12:00:00Z` / `…+02:00`. */
export function parseInstant(value: string): Date {
  const m = ISO_INSTANT.exec(value.trim());
  if (!m) throw new InvalidArgumentError('Expected an ISO 8601 date or date-time with a zone, e.g. 2025-06-01T00:00:00Z.');
  const [, y, mo, d, h, mi, s, fraction, zone] = m;
  const year = Number(y);
  const month = Number(mo);
  if (month < 1 || month > 12 || Number(d) < 1 || Number(d) > daysInMonth(year, month)) {
    throw new InvalidArgumentError('No such calendar date.');
  }
  if (h !== undefined && (Number(h) > 23 || Number(mi) > 59 || Number(s ?? 0) > 59)) {
    throw new InvalidArgumentError('No such time of day.');
  }
  // Rebuild the one format Date.parse is specified to accept (ms precision, ±HH:mm zone).
  let text = `${y}-${mo}-${d}`;
  if (h !== undefined) {
    const ms = (fraction ?? '.000').padEnd(4, '0').slice(0, 4);
    const tz = zone!.toUpperCase() === 'Z' ? 'Z' : `${zone!.slice(0, 3)}:${zone!.slice(-2)}`;
    text += `T${h}:${mi}:${s ?? '00'}${ms}${tz}`;
  }
  const date = new Date(text);
  if (Number.isNaN(date.getTime())) throw new InvalidArgumentError('Not a valid date.');
  return date;
}

/** Non-negative integer that survives the round trip through a JS number. */
export function parseNonNegativeInt(value: string): number {
  if (!/^\d+$/.test(value.trim())) throw new InvalidArgumentError('Expected a non-negative integer.');
  const n = Number(value.trim());
  if (!Number.isSafeInteger(n)) throw new InvalidArgumentError(`Must be at most ${Number.MAX_SAFE_INTEGER}.`);
  return n;
}

/** Id of an integer-keyed row (quest, campaign). */
export function parseRowId(value: string): number {
  if (!/^\d+$/.test(value.trim())) throw new InvalidArgumentError('Expected a positive integer id.');
  const n = Number(value.trim());
  if (n < 1 || n > INT4_MAX) throw new InvalidArgumentError(`Expected an id between 1 and ${INT4_MAX}.`);
  return n;
}

const HEX_ADDRESS = /^0x[0-9a-fA-F]{40}$/;

/**
 * Pass address in any letter case, returned as given (trimmed). Any 0x + 40 hex digits is an
 * address (toChecksumAddress in @quest/domain accepts the same), so this needs no checksum: the
 * database layer stores the EIP-55 form (requirePassAddress) and the commands print what it stored.
 */
export function parsePassAddress(value: string): `0x${string}` {
  const pass = value.trim();
  if (!HEX_ADDRESS.test(pass)) throw new InvalidArgumentError('Expected 0x followed by 40 hexadecimal digits.');
  return pass as `0x${string}`;
}

export function parseOwnerId(value: string): string {
  const id = value.trim();
  if (!/^own_[0-9a-z]{1,64}$/.test(id)) throw new InvalidArgumentError('Expected an owner id like own_01jf8q….');
  return id;
}

/**
 * An API key as @quest/domain's isWellFormedApiKey accepts it (`sk_` + 16–128 of A–Z a–z 0–9 _ -);
 * the message says which part of that rule the value breaks.
 */
export function parseApiKey(value: string): string {
  const key = value.trim();
  if (!isWellFormedApiKey(key)) throw new InvalidArgumentError(apiKeyProblem(key));
  return key;
}

function apiKeyProblem(key: string): string {
  if (!key.startsWith('sk_')) return 'Expected an API key: sk_ followed by 16 to 128 characters.';
  const rest = key.slice(3);
  if (rest.length < 16 || rest.length > 128) return `Expected 16 to 128 characters after sk_ (this has ${rest.length}).`;
  return 'Expected only letters, digits, _ and - after sk_.';
}

/** What `key revoke --key` names: a key id (`key_…`, as `key list` shows it) or the full key (`sk_…`). */
export type KeyRef = { keyId: string } | { apiKey: string };

export function parseKeyRef(value: string): KeyRef {
  const text = value.trim();
  if (text.startsWith('sk_')) return { apiKey: text };
  if (/^key_[0-9a-z]{1,64}$/.test(text)) return { keyId: text };
  throw new InvalidArgumentError('Expected a key id (key_…, see "key list") or the full API key (sk_…).');
}

export function parseKeyId(value: string): string {
  const id = value.trim();
  if (!/^key_[0-9a-z]{1,64}$/.test(id)) throw new InvalidArgumentError('Expected a key id like key_01jf8q….');
  return id;
}

/** Rows per page of a list command when --limit is not given. */
export const DEFAULT_LIST_LIMIT = 100;

/** Rows per page of a list command. */
export function parseLimit(value: string): number {
  const text = value.trim();
  const n = /^\d+$/.test(text) ? Number(text) : Number.NaN;
  if (!(n >= 1 && n <= MAX_LIST_LIMIT)) throw new InvalidArgumentError(`Expected an integer from 1 to ${MAX_LIST_LIMIT}.`);
  return n;
}

/** Cursor of an integer-keyed list (accounts ids are bigint: any safe integer). */
export function parseAfterInt(value: string): number {
  const text = value.trim();
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(Number(text)))
    throw new InvalidArgumentError('Expected an id (a whole number).');
  return Number(text);
}

export function parseActionStatus(value: string): ActionStatus {
  const status = value.trim().toLowerCase();
  if (!(ACTION_STATUSES as readonly string[]).includes(status)) {
    throw new InvalidArgumentError(`Expected one of: ${ACTION_STATUSES.join(', ')}.`);
  }
  return status as ActionStatus;
}

export function parseName(value: string): string {
  const name = value.trim();
  if (name.length < 1 || name.length > 200) throw new InvalidArgumentError('Expected 1 to 200 characters.');
  return name;
}

/**
 * `quests=on campaigns=off` → `{ quests: true, campaigns: false }`. Every name must be one of
 * `features`; a name given twice must agree with itself.
 */
export function parseFeatureAssignments<F extends string>(
  assignments: readonly string[],
  features: readonly F[],
): Partial<Record<F, boolean>> {
  if (assignments.length === 0)
    throw new InvalidArgumentError(`Give at least one of ${features.map((f) => `${f}=on|off`).join(' ')}.`);
  const result: Partial<Record<F, boolean>> = {};
  for (const assignment of assignments) {
    const m = /^([a-z]+)=(on|off)$/i.exec(assignment.trim());
    if (!m) throw new InvalidArgumentError(`"${assignment}" is not NAME=on|off.`);
    const name = m[1]!.toLowerCase();
    if (!(features as readonly string[]).includes(name)) {
      throw new InvalidArgumentError(`Unknown feature "${m[1]}"; features are ${features.join(', ')}.`);
    }
    const enabled = m[2]!.toLowerCase() === 'on';
    const previous = result[name as F];
    if (previous !== undefined && previous !== enabled) throw new InvalidArgumentError(`"${name}" is set both on and off.`);
    result[name as F] = enabled;
  }
  return result;
}

export function parseEndpointId(value: string): string {
  const id = value.trim();
  if (!/^whe_[0-9a-z]{1,64}$/.test(id)) throw new InvalidArgumentError('Expected a webhook endpoint id like whe_01jf8q….');
  return id;
}

export function parseDeliveryStatus(value: string): 'pending' | 'delivered' | 'failed' {
  const s = value.trim();
  if (s !== 'pending' && s !== 'delivered' && s !== 'failed')
    throw new InvalidArgumentError('Expected pending, delivered or failed.');
  return s;
}

/** A quest.budget_low threshold in points, or `default` (10 % of the quest's total points). Not null: commander turns it into ''. */
export function parseThreshold(value: string): number | 'default' {
  return value.trim() === 'default' ? 'default' : parseNonNegativeInt(value);
}
