import {
  type ActionStatus,
  ACTION_STATUSES,
  displayPrefix,
  generateApiKey,
  hashApiKey,
  isWellFormedApiKey,
  newId,
  toChecksumAddress,
} from '@quest/domain';
import type { Sql } from './client.ts';

/**
 * Operator repository: owners and their API keys, accounts (one or in bulk), campaigns, quests,
 * and the ledger audit. Used by the admin CLI; the API authenticates keys with `findApiKeyWithQuest`.
 * Inputs are validated here as well as in the CLI, so no caller can store a row the service would
 * misread (an unchecksummed address, an inverted window, an unsafe integer).
 */

export const ADMIN_ERROR_CODES = [
  'INVALID_INPUT',
  'INVALID_ADDRESS',
  'OWNER_NOT_FOUND',
  'CAMPAIGN_NOT_FOUND',
  'QUEST_NOT_FOUND',
  'API_KEY_NOT_FOUND',
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

type PassAddress = `0x${string}`;

export interface OwnerRecord {
  id: string;
  name: string;
  pass: PassAddress;
  createdAt: Date;
}

export interface ApiKeyRecord {
  id: string;
  ownerId: string;
  prefix: string;
  createdAt: Date;
  revokedAt: Date | null;
}

export interface AccountRecord {
  id: number;
  pass: PassAddress;
  balance: number;
  createdAt: Date;
}

export interface CampaignRecord {
  id: number;
  name: string;
  description: string;
  startAt: Date;
  endAt: Date;
  isActive: boolean;
  externalAppId: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface QuestRecord {
  id: number;
  ownerId: string;
  campaignId: number | null;
  name: string;
  description: string;
  startAt: Date;
  endAt: Date;
  isPublic: boolean;
  actionStatus: ActionStatus;
  totalPoints: number;
  pointsRemaining: number;
  expectedPointsPerCompletion: number;
  createdAt: Date;
  updatedAt: Date;
}

// ---------------------------------------------------------------------------------------------
// Validation shared by every writer below.

const MAX_NAME = 200;
/** Largest id of an `integer` column (campaigns.id, quests.id). */
const MAX_INT4 = 2_147_483_647;

export function requirePassAddress(input: string): PassAddress {
  const pass = toChecksumAddress(input.trim());
  if (!pass)
    throw new AdminError(
      'INVALID_ADDRESS',
      `invalid pass address ${JSON.stringify(input)}: expected 0x followed by 40 hex digits`,
    );
  return pass;
}

function checkName(what: string, name: string): string {
  const trimmed = name.trim();
  if (trimmed.length < 1 || trimmed.length > MAX_NAME) {
    throw new AdminError('INVALID_INPUT', `${what} name must be 1 to ${MAX_NAME} characters`);
  }
  return trimmed;
}

function checkWindow(startAt: Date, endAt: Date): void {
  if (Number.isNaN(startAt.getTime()) || Number.isNaN(endAt.getTime()))
    throw new AdminError('INVALID_INPUT', 'start and end must be valid dates');
  if (endAt.getTime() <= startAt.getTime()) throw new AdminError('INVALID_INPUT', 'end must be after start');
}

function checkPoints(what: string, value: number): void {
  if (!Number.isSafeInteger(value) || value < 0)
    throw new AdminError('INVALID_INPUT', `${what} must be a non-negative safe integer`);
}

function isIntId(value: number): boolean {
  return Number.isInteger(value) && value >= 1 && value <= MAX_INT4;
}

const isUniqueViolation = (e: unknown) => (e as { code?: unknown } | null)?.code === '23505';

// ---------------------------------------------------------------------------------------------
// Owners and API keys. A key is returned once, at creation; only its SHA-256 is stored.

interface OwnerRow {
  id: string;
  name: string;
  pass_address: PassAddress;
  created_at: Date;
}
const toOwner = (r: OwnerRow): OwnerRecord => ({ id: r.id, name: r.name, pass: r.pass_address, createdAt: r.created_at });

interface IssuedKey {
  apiKey: string;
  key: ApiKeyRecord;
}

async function insertKey(sql: Sql, ownerId: string): Promise<IssuedKey | null> {
  const apiKey = generateApiKey();
  const [row] = await sql<{ id: string; owner_id: string; prefix: string; created_at: Date }[]>`
    insert into api_keys (id, owner_id, key_hash, prefix)
    select ${newId('key')}, o.id, ${hashApiKey(apiKey)}, ${displayPrefix(apiKey)} from owners o where o.id = ${ownerId}
    returning id, owner_id, prefix, created_at`;
  if (!row) return null;
  return { apiKey, key: { id: row.id, ownerId: row.owner_id, prefix: row.prefix, createdAt: row.created_at, revokedAt: null } };
}

/** Create an owner and its first API key, atomically. */
export async function createOwner(sql: Sql, input: { name: string; pass: string }): Promise<{ owner: OwnerRecord } & IssuedKey> {
  const name = checkName('owner', input.name);
  const pass = requirePassAddress(input.pass);
  try {
    return await sql.begin(async (tx) => {
      const [row] = await tx<OwnerRow[]>`
        insert into owners (id, name, pass_address) values (${newId('own')}, ${name}, ${pass})
        returning id, name, pass_address, created_at`;
      const issued = await insertKey(tx as unknown as Sql, row!.id);
      return { owner: toOwner(row!), ...issued! };
    });
  } catch (error) {
    if (isUniqueViolation(error)) throw new AdminError('ALREADY_EXISTS', `an owner with pass address ${pass} already exists`);
    throw error;
  }
}

export async function createApiKey(sql: Sql, ownerId: string): Promise<IssuedKey> {
  const issued = await insertKey(sql, ownerId);
  if (!issued) throw new AdminError('OWNER_NOT_FOUND', `owner ${JSON.stringify(ownerId)} not found`);
  return issued;
}

export type KeyReference = { apiKey: string } | { keyId: string };

const KEY_ID = /^key_[0-9a-z]{1,64}$/;

/**
 * Revoke a key named by its id (`key_…`, as `listApiKeys` shows it) or given in full (`sk_…`).
 * `alreadyRevoked` tells a second revocation from the first; the first revocation time is kept.
 */
export async function revokeKey(sql: Sql, ref: KeyReference): Promise<{ key: ApiKeyRecord; alreadyRevoked: boolean }> {
  const byId = 'keyId' in ref;
  const notFound = new AdminError(
    'API_KEY_NOT_FOUND',
    byId ? `API key ${JSON.stringify(ref.keyId)} not found` : `API key ${displayPrefix(ref.apiKey)}… not found`,
  );
  if (byId ? !KEY_ID.test(ref.keyId) : !isWellFormedApiKey(ref.apiKey)) throw notFound;
  const match = byId ? sql`id = ${ref.keyId}` : sql`key_hash = ${hashApiKey(ref.apiKey)}`;
  type Row = { id: string; owner_id: string; prefix: string; created_at: Date; revoked_at: Date };
  const toKey = (row: Row): ApiKeyRecord => ({
    id: row.id,
    ownerId: row.owner_id,
    prefix: row.prefix,
    createdAt: row.created_at,
    revokedAt: row.revoked_at,
  });
  const [revoked] = await sql<Row[]>`
    update api_keys set revoked_at = now() where ${match} and revoked_at is null
    returning id, owner_id, prefix, created_at, revoked_at`;
  if (revoked) return { key: toKey(revoked), alreadyRevoked: false };
  // Not updated: unknown, or revoked before (a revocation is never undone, so this cannot race).
  const [existing] = await sql<Row[]>`select id, owner_id, prefix, created_at, revoked_at from api_keys where ${match}`;
  if (!existing) throw notFound;
  return { key: toKey(existing), alreadyRevoked: true };
}

// ---------------------------------------------------------------------------------------------
// Accounts.

interface AccountRow {
  id: number;
  pass_address: PassAddress;
  balance: number;
  created_at: Date;
}
const toAccount = (r: AccountRow): AccountRecord => ({
  id: r.id,
  pass: r.pass_address,
  balance: r.balance,
  createdAt: r.created_at,
});

export async function createAccount(sql: Sql, input: { pass: string }): Promise<AccountRecord> {
  const pass = requirePassAddress(input.pass);
  const [row] = await sql<AccountRow[]>`
    insert into accounts (pass_address) values (${pass}) on conflict (pass_address) do nothing
    returning id, pass_address, balance, created_at`;
  if (!row) throw new AdminError('ALREADY_EXISTS', `an account with pass address ${pass} already exists`);
  return toAccount(row);
}

export interface ImportRow {
  /** Where the value came from (a CSV line number), for the invalid-row report. */
  line: number;
  value: string;
}

export interface ImportProgress {
  processed: number;
  created: number;
  skipped: number;
  invalid: number;
}

export interface ImportResult extends ImportProgress {
  /** The first `maxInvalidRows` invalid rows; `invalid` counts them all. */
  invalidRows: ImportRow[];
}

export interface ImportOptions {
  /** Addresses per INSERT statement. */
  chunkSize?: number;
  maxInvalidRows?: number;
  /** Called after every chunk is written. */
  onProgress?: (progress: ImportProgress) => void;
}

/**
 * Create accounts in bulk from a stream of addresses, skipping existing ones (and repeats within
 * the input). Each chunk is one set-based statement in its own transaction, so an interrupted
 * import can simply be run again. While one chunk is being written the next one is being read.
 */
export async function importAccounts(
  sql: Sql,
  rows: Iterable<ImportRow | string> | AsyncIterable<ImportRow | string>,
  opts: ImportOptions = {},
): Promise<ImportResult> {
  const chunkSize = opts.chunkSize ?? 10_000;
  const maxInvalidRows = opts.maxInvalidRows ?? 100;
  const result: ImportResult = { processed: 0, created: 0, skipped: 0, invalid: 0, invalidRows: [] };

  let inflight: Promise<void> = Promise.resolve();
  let failure: { error: unknown } | undefined;
  const write = (addresses: string[]) => {
    const previous = inflight;
    inflight = (async () => {
      await previous;
      if (failure) return;
      // One text[] literal, written out here rather than with sql.array(): postgres.js types an
      // array parameter only once its pool has fetched the array types, which a fresh pool has
      // not. The elements are checksummed addresses ([0-9A-Za-z] only), so they need no quoting.
      const [row] = await sql<{ created: number }[]>`
        with inserted as (
          insert into accounts (pass_address)
          select * from unnest(${`{${addresses.join(',')}}`}::text[])
          on conflict (pass_address) do nothing
          returning 1
        )
        select count(*)::int as created from inserted`;
      result.created += row!.created;
      result.skipped += addresses.length - row!.created;
      result.processed += addresses.length;
      opts.onProgress?.({
        processed: result.processed,
        created: result.created,
        skipped: result.skipped,
        invalid: result.invalid,
      });
    })().catch((error: unknown) => {
      failure ??= { error };
    });
  };

  let chunk: string[] = [];
  let index = 0;
  for await (const item of rows) {
    index += 1;
    const row = typeof item === 'string' ? { line: index, value: item } : item;
    const pass = toChecksumAddress(row.value.trim());
    if (!pass) {
      result.invalid += 1;
      result.processed += 1;
      if (result.invalidRows.length < maxInvalidRows) result.invalidRows.push(row);
      continue;
    }
    chunk.push(pass);
    if (chunk.length >= chunkSize) {
      // Let at most one chunk wait behind the one being written: bounded memory, overlapped I/O.
      await inflight;
      if (failure) break;
      write(chunk);
      chunk = [];
    }
  }
  if (chunk.length && !failure) write(chunk);
  await inflight;
  if (failure) throw failure.error;
  return result;
}

// ---------------------------------------------------------------------------------------------
// Campaigns and quests.

interface CampaignRow {
  id: number;
  name: string;
  description: string;
  start_at: Date;
  end_at: Date;
  is_active: boolean;
  external_app_id: string | null;
  created_at: Date;
  updated_at: Date;
}
const toCampaign = (r: CampaignRow): CampaignRecord => ({
  id: r.id,
  name: r.name,
  description: r.description,
  startAt: r.start_at,
  endAt: r.end_at,
  isActive: r.is_active,
  externalAppId: r.external_app_id,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export interface NewCampaign {
  name: string;
  description?: string;
  startAt: Date;
  endAt: Date;
  isActive?: boolean;
  externalAppId?: string | null;
}

export async function createCampaign(sql: Sql, input: NewCampaign): Promise<CampaignRecord> {
  const name = checkName('campaign', input.name);
  checkWindow(input.startAt, input.endAt);
  const [row] = await sql<CampaignRow[]>`
    insert into campaigns (name, description, start_at, end_at, is_active, external_app_id)
    values (${name}, ${input.description ?? ''}, ${input.startAt}, ${input.endAt}, ${input.isActive ?? true}, ${input.externalAppId ?? null})
    returning *`;
  return toCampaign(row!);
}

interface QuestRow {
  id: number;
  owner_id: string;
  campaign_id: number | null;
  name: string;
  description: string;
  start_at: Date;
  end_at: Date;
  is_public: boolean;
  action_status: ActionStatus;
  total_points: number;
  points_remaining: number;
  expected_points_per_completion: number;
  created_at: Date;
  updated_at: Date;
}
const toQuest = (r: QuestRow): QuestRecord => ({
  id: r.id,
  ownerId: r.owner_id,
  campaignId: r.campaign_id,
  name: r.name,
  description: r.description,
  startAt: r.start_at,
  endAt: r.end_at,
  isPublic: r.is_public,
  actionStatus: r.action_status,
  totalPoints: r.total_points,
  pointsRemaining: r.points_remaining,
  expectedPointsPerCompletion: r.expected_points_per_completion,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export interface NewQuest {
  ownerId: string;
  campaignId?: number | null;
  name: string;
  description?: string;
  startAt: Date;
  endAt: Date;
  totalPoints: number;
  expectedPointsPerCompletion: number;
  isPublic?: boolean;
}

/** Create a quest with its whole budget unallocated (points_remaining = total_points). */
export async function createQuest(sql: Sql, input: NewQuest): Promise<QuestRecord> {
  const name = checkName('quest', input.name);
  checkWindow(input.startAt, input.endAt);
  checkPoints('total points', input.totalPoints);
  checkPoints('expected points per completion', input.expectedPointsPerCompletion);
  const campaignId = input.campaignId ?? null;
  if (campaignId !== null && !isIntId(campaignId)) throw new AdminError('CAMPAIGN_NOT_FOUND', `campaign ${campaignId} not found`);
  // Owners and campaigns are never deleted, so checking first and inserting after cannot race.
  const [found] = await sql<{ owner: boolean; campaign: boolean }[]>`
    select exists (select 1 from owners where id = ${input.ownerId}) as owner,
           ${campaignId}::int is null or exists (select 1 from campaigns where id = ${campaignId}::int) as campaign`;
  if (!found!.owner) throw new AdminError('OWNER_NOT_FOUND', `owner ${JSON.stringify(input.ownerId)} not found`);
  if (!found!.campaign) throw new AdminError('CAMPAIGN_NOT_FOUND', `campaign ${campaignId} not found`);
  const [row] = await sql<QuestRow[]>`
    insert into quests (owner_id, campaign_id, name, description, start_at, end_at, is_public,
                        total_points, points_remaining, expected_points_per_completion)
    values (${input.ownerId}, ${campaignId}, ${name}, ${input.description ?? ''}, ${input.startAt}, ${input.endAt},
            ${input.isPublic ?? true}, ${input.totalPoints}, ${input.totalPoints}, ${input.expectedPointsPerCompletion})
    returning *`;
  return toQuest(row!);
}

export async function setQuestActionStatus(sql: Sql, questId: number, status: ActionStatus): Promise<QuestRecord> {
  if (!ACTION_STATUSES.includes(status)) {
    throw new AdminError('INVALID_INPUT', `action status must be one of ${ACTION_STATUSES.join(', ')}`);
  }
  if (!isIntId(questId)) throw new AdminError('QUEST_NOT_FOUND', `quest ${questId} not found`);
  const [row] = await sql<QuestRow[]>`
    update quests set action_status = ${status}, updated_at = now() where id = ${questId} returning *`;
  if (!row) throw new AdminError('QUEST_NOT_FOUND', `quest ${questId} not found`);
  return toQuest(row);
}

// ---------------------------------------------------------------------------------------------
// Audit: the ledger invariants, checked set-based (one grouped pass over payouts per check).

export interface QuestViolation {
  questId: number;
  totalPoints: number;
  pointsRemaining: number;
  /** Σ payouts.amount of the quest. */
  paidOut: number;
  /** total_points − (points_remaining + paid out); 0 when only a sign is wrong. */
  discrepancy: number;
  problems: string[];
}

export interface AccountViolation {
  accountId: number;
  pass: string;
  balance: number;
  paidIn: number;
  /** balance − Σ payouts.amount. */
  discrepancy: number;
  problems: string[];
}

export interface PayoutViolation {
  payoutId: string;
  questId: number;
  accountId: number;
  amount: number;
  problems: string[];
}

export interface AuditReport {
  ok: boolean;
  checked: { quests: number; accounts: number; payouts: number; pointsPaidOut: number };
  violations: { quests: number; accounts: number; payouts: number };
  /** Offending rows, at most `limit` of each kind; `violations` counts them all. */
  quests: QuestViolation[];
  accounts: AccountViolation[];
  payouts: PayoutViolation[];
}

export async function audit(sql: Sql, opts: { limit?: number } = {}): Promise<AuditReport> {
  const limit = opts.limit ?? 100;
  // A repeatable-read snapshot: the counts and the violations describe one instant even while
  // allocations go on. Read-only, so it never blocks writers.
  return sql.begin('isolation level repeatable read read only', async (tx) => {
    const [totals] = await tx<{ quests: number; accounts: number; payouts: number; paid: string }[]>`
      select (select count(*) from quests)::int as quests,
             (select count(*) from accounts)::int as accounts,
             (select count(*) from payouts)::int as payouts,
             (select coalesce(sum(amount), 0) from payouts)::text as paid`;

    const quests = await tx<
      {
        id: number;
        total_points: string;
        points_remaining: string;
        paid: string;
        discrepancy: string;
        problems: string[];
        n: number;
      }[]
    >`
      with paid as (select quest_id, sum(amount) as paid from payouts group by quest_id),
      checked as (
        select q.id, q.total_points, q.points_remaining, coalesce(p.paid, 0) as paid,
               array_remove(array[
                 case when q.total_points <> q.points_remaining + coalesce(p.paid, 0)
                      then 'total_points <> points_remaining + sum(payouts)' end,
                 case when q.total_points < 0 then 'total_points < 0' end,
                 case when q.points_remaining < 0 then 'points_remaining < 0' end,
                 case when q.points_remaining > q.total_points then 'points_remaining > total_points' end
               ], null) as problems
        from quests q left join paid p on p.quest_id = q.id
      )
      select id, total_points::text, points_remaining::text, paid::text,
             (total_points - points_remaining - paid)::text as discrepancy, problems,
             count(*) over ()::int as n
      from checked where cardinality(problems) > 0
      order by id limit ${limit}`;

    const accounts = await tx<
      { id: number; pass_address: string; balance: string; paid: string; discrepancy: string; problems: string[]; n: number }[]
    >`
      with paid as (select account_id, sum(amount) as paid from payouts group by account_id),
      checked as (
        select a.id, a.pass_address, a.balance, coalesce(p.paid, 0) as paid,
               array_remove(array[
                 case when a.balance <> coalesce(p.paid, 0) then 'balance <> sum(payouts)' end,
                 case when a.balance < 0 then 'balance < 0' end
               ], null) as problems
        from accounts a left join paid p on p.account_id = a.id
      )
      select id, pass_address, balance::text, paid::text, (balance - paid)::text as discrepancy, problems,
             count(*) over ()::int as n
      from checked where cardinality(problems) > 0
      order by id limit ${limit}`;

    const payouts = await tx<{ id: string; quest_id: number; account_id: number; amount: string; n: number }[]>`
      select id, quest_id, account_id, amount::text, count(*) over ()::int as n
      from payouts where amount <= 0 order by id limit ${limit}`;

    const violations = { quests: quests[0]?.n ?? 0, accounts: accounts[0]?.n ?? 0, payouts: payouts[0]?.n ?? 0 };
    return {
      ok: violations.quests + violations.accounts + violations.payouts === 0,
      checked: {
        quests: totals!.quests,
        accounts: totals!.accounts,
        payouts: totals!.payouts,
        pointsPaidOut: Number(totals!.paid),
      },
      violations,
      quests: quests.map((r) => ({
        questId: r.id,
        totalPoints: Number(r.total_points),
        pointsRemaining: Number(r.points_remaining),
        paidOut: Number(r.paid),
        discrepancy: Number(r.discrepancy),
        problems: r.problems,
      })),
      accounts: accounts.map((r) => ({
        accountId: r.id,
        pass: r.pass_address,
        balance: Number(r.balance),
        paidIn: Number(r.paid),
        discrepancy: Number(r.discrepancy),
        problems: r.problems,
      })),
      payouts: payouts.map((r) => ({
        payoutId: r.id,
        questId: r.quest_id,
        accountId: r.account_id,
        amount: Number(r.amount),
        problems: ['amount <= 0'],
      })),
    };
  }) as Promise<AuditReport>;
}

// ---------------------------------------------------------------------------------------------
// Lists for operators: one page at a time, in id order, continued after the last id seen
// (keyset pagination: a page costs the same however deep it is, and rows created meanwhile are
// not skipped or repeated).

export const MAX_LIST_LIMIT = 1000;

export interface ListPage<T> {
  items: T[];
  /** Pass as `after` for the next page; null when this page is the last. */
  next: string | number | null;
}

interface ListOptions<Cursor> {
  /** Rows per page, 1 to MAX_LIST_LIMIT. */
  limit: number;
  /** Only rows with a greater id. */
  after?: Cursor;
}

function checkLimit(limit: number): void {
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIST_LIMIT)
    throw new AdminError('INVALID_INPUT', `limit must be 1 to ${MAX_LIST_LIMIT}`);
}

function page<R, T extends { id: string | number }>(rows: R[], limit: number, map: (row: R) => T): ListPage<T> {
  const items = rows.slice(0, limit).map(map);
  return { items, next: rows.length > limit ? items[items.length - 1]!.id : null };
}

async function requireOwner(sql: Sql, ownerId: string): Promise<void> {
  const [row] = await sql`select 1 from owners where id = ${ownerId}`;
  if (!row) throw new AdminError('OWNER_NOT_FOUND', `owner ${JSON.stringify(ownerId)} not found`);
}

export type OwnerListItem = OwnerRecord & { activeKeys: number; quests: number };

export async function listOwners(sql: Sql, opts: ListOptions<string>): Promise<ListPage<OwnerListItem>> {
  checkLimit(opts.limit);
  const rows = await sql<(OwnerRow & { active_keys: number; quests: number })[]>`
    select o.id, o.name, o.pass_address, o.created_at,
           (select count(*)::int from api_keys k where k.owner_id = o.id and k.revoked_at is null) as active_keys,
           (select count(*)::int from quests q where q.owner_id = o.id) as quests
    from owners o
    where ${opts.after === undefined ? sql`true` : sql`o.id > ${opts.after}`}
    order by o.id limit ${opts.limit + 1}`;
  return page(rows, opts.limit, (r) => ({ ...toOwner(r), activeKeys: r.active_keys, quests: r.quests }));
}

/** API keys (never the secret: id, display prefix, owner, times), optionally of one owner. */
export async function listApiKeys(sql: Sql, opts: ListOptions<string> & { ownerId?: string }): Promise<ListPage<ApiKeyRecord>> {
  checkLimit(opts.limit);
  if (opts.ownerId !== undefined) await requireOwner(sql, opts.ownerId);
  const rows = await sql<{ id: string; owner_id: string; prefix: string; created_at: Date; revoked_at: Date | null }[]>`
    select id, owner_id, prefix, created_at, revoked_at from api_keys
    where ${opts.after === undefined ? sql`true` : sql`id > ${opts.after}`}
      and ${opts.ownerId === undefined ? sql`true` : sql`owner_id = ${opts.ownerId}`}
    order by id limit ${opts.limit + 1}`;
  return page(rows, opts.limit, (r) => ({
    id: r.id,
    ownerId: r.owner_id,
    prefix: r.prefix,
    createdAt: r.created_at,
    revokedAt: r.revoked_at,
  }));
}

export async function listAccounts(sql: Sql, opts: ListOptions<number>): Promise<ListPage<AccountRecord>> {
  checkLimit(opts.limit);
  const rows = await sql<AccountRow[]>`
    select id, pass_address, balance, created_at from accounts
    where ${opts.after === undefined ? sql`true` : sql`id > ${opts.after}`}
    order by id limit ${opts.limit + 1}`;
  return page(rows, opts.limit, toAccount);
}

export type CampaignListItem = CampaignRecord & { quests: number };

export async function listCampaigns(sql: Sql, opts: ListOptions<number>): Promise<ListPage<CampaignListItem>> {
  checkLimit(opts.limit);
  const rows = await sql<(CampaignRow & { quests: number })[]>`
    select c.*, (select count(*)::int from quests q where q.campaign_id = c.id) as quests
    from campaigns c
    where ${opts.after === undefined ? sql`true` : sql`c.id > ${opts.after}`}
    order by c.id limit ${opts.limit + 1}`;
  return page(rows, opts.limit, (r) => ({ ...toCampaign(r), quests: r.quests }));
}

/** Quests, public and private, optionally of one owner and/or one campaign. */
export async function listQuests(
  sql: Sql,
  opts: ListOptions<number> & { ownerId?: string; campaignId?: number },
): Promise<ListPage<QuestRecord>> {
  checkLimit(opts.limit);
  if (opts.ownerId !== undefined) await requireOwner(sql, opts.ownerId);
  if (opts.campaignId !== undefined) {
    const [row] = isIntId(opts.campaignId) ? await sql`select 1 from campaigns where id = ${opts.campaignId}` : [];
    if (!row) throw new AdminError('CAMPAIGN_NOT_FOUND', `campaign ${opts.campaignId} not found`);
  }
  const rows = await sql<QuestRow[]>`
    select * from quests
    where ${opts.after === undefined ? sql`true` : sql`id > ${opts.after}`}
      and ${opts.ownerId === undefined ? sql`true` : sql`owner_id = ${opts.ownerId}`}
      and ${opts.campaignId === undefined ? sql`true` : sql`campaign_id = ${opts.campaignId}`}
    order by id limit ${opts.limit + 1}`;
  return page(rows, opts.limit, toQuest);
}
