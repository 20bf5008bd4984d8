import type { Sql } from '../client.ts';

/**
 * The operator's expected mistakes and the input checks every operator write shares. Inputs are
 * checked here as well as in the CLI, so no caller can store a row the service would misread (an
 * unchecksummed address, an inverted window, an unsafe integer). This module imports nothing at
 * run time (quest-admin loads it at start, through ./lists); the pass address check, which needs
 * a Keccak-256 for the checksum, is in ./pass.ts.
 */

export const ADMIN_ERROR_CODES = [
  'INVALID_INPUT',
  'INVALID_ADDRESS',
  'OWNER_NOT_FOUND',
  'CAMPAIGN_NOT_FOUND',
  'QUEST_NOT_FOUND',
  'API_KEY_NOT_FOUND',
  'WEBHOOK_ENDPOINT_NOT_FOUND',
  'ALREADY_EXISTS',
] as const;
export type AdminErrorCode = (typeof ADMIN_ERROR_CODES)[number];

/** An expected operator mistake (bad input, unknown id, duplicate); anything else thrown is a bug or an outage. */
export class AdminError extends Error {
  override readonly name = 'AdminError';
  readonly code: AdminErrorCode;

  constructor(code: AdminErrorCode, message: string) {
    super(message);
    this.code = code;
  }
}

export const isAdminError = (e: unknown): e is AdminError => e instanceof AdminError;

export type PassAddress = `0x${string}`;

const MAX_NAME = 200;
/** Largest id of an `integer` column (campaigns.id, quests.id). */
const MAX_INT4 = 2_147_483_647;

export function checkName(what: string, name: string): string {
  const trimmed = name.trim();
  if (trimmed.length < 1 || trimmed.length > MAX_NAME) {
    throw new AdminError('INVALID_INPUT', `${what} name must be 1 to ${MAX_NAME} characters`);
  }
  return trimmed;
}

export function checkWindow(startAt: Date, endAt: Date): void {
  if (Number.isNaN(startAt.getTime()) || Number.isNaN(endAt.getTime()))
    throw new AdminError('INVALID_INPUT', 'start and end must be valid dates');
  if (endAt.getTime() <= startAt.getTime()) throw new AdminError('INVALID_INPUT', 'end must be after start');
}

export function checkPoints(what: string, value: number): void {
  if (!Number.isSafeInteger(value) || value < 0)
    throw new AdminError('INVALID_INPUT', `${what} must be a non-negative safe integer`);
}

export function isIntId(value: number): boolean {
  return Number.isInteger(value) && value >= 1 && value <= MAX_INT4;
}

export const isUniqueViolation = (e: unknown) => (e as { code?: unknown } | null)?.code === '23505';

/** Throw OWNER_NOT_FOUND unless the owner exists (owners are never deleted, so the answer holds). */
export async function requireOwner(sql: Sql, ownerId: string): Promise<void> {
  const [row] = await sql`select 1 from owners where id = ${ownerId}`;
  if (!row) throw new AdminError('OWNER_NOT_FOUND', `owner ${JSON.stringify(ownerId)} not found`);
}
