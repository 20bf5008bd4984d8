import { randomBytes } from 'node:crypto';
import type { Sql } from '@quest/db';
import { audit } from '@quest/db/audit';
import { displayPrefix, generateApiKey, hashApiKey, newId, toChecksumAddress } from '@quest/domain';

/**
 * Rows for tests, inserted with SQL: owners with keys, campaigns, quests, accounts and payouts.
 * One copy for every test suite (API, CLI, database, system), so a test states only what it is about.
 */

export const HOUR = 3_600_000;
export const DAY = 24 * HOUR;

/** A random address in the EIP-55 form the service stores and answers. */
export function randomAddress(): `0x${string}` {
  return toChecksumAddress(`0x${randomBytes(20).toString('hex')}`)!;
}

/** The n-th test address, in EIP-55 form (the same n gives the same address in every test). */
export const testAddress = (n: number): `0x${string}` => toChecksumAddress(`0x${n.toString(16).padStart(40, '0')}`)!;

export interface SeededOwner {
  id: string;
  name: string;
  address: `0x${string}`;
  apiKey: string;
}

export async function createOwner(sql: Sql, fields: { name?: string; address?: `0x${string}` } = {}): Promise<SeededOwner> {
  const id = newId('own');
  const name = fields.name ?? `Owner ${id.slice(-6)}`;
  const address = fields.address ?? randomAddress();
  await sql`insert into owners (id, name, pass_address) values (${id}, ${name}, ${address})`;
  const apiKey = await createApiKey(sql, id);
  return { id, name, address, apiKey };
}

export async function createApiKey(sql: Sql, ownerId: string, opts: { revoked?: boolean } = {}): Promise<string> {
  const key = generateApiKey();
  await sql`
    insert into api_keys (id, owner_id, key_hash, prefix, revoked_at)
    values (${newId('key')}, ${ownerId}, ${hashApiKey(key)}, ${displayPrefix(key)}, ${opts.revoked ? new Date() : null})`;
  return key;
}

export async function revokeApiKey(sql: Sql, key: string): Promise<void> {
  await sql`update api_keys set revoked_at = now() where key_hash = ${hashApiKey(key)}`;
}

export interface CampaignFields {
  name?: string;
  description?: string;
  startAt?: Date;
  endAt?: Date;
  isActive?: boolean;
  externalAppId?: string | null;
}

export async function createCampaign(sql: Sql, f: CampaignFields = {}): Promise<number> {
  const [row] = await sql<{ id: number }[]>`
    insert into campaigns (name, description, start_at, end_at, is_active, external_app_id)
    values (${f.name ?? 'Campaign'}, ${f.description ?? 'A campaign'}, ${f.startAt ?? new Date(Date.now() - DAY)},
            ${f.endAt ?? new Date(Date.now() + 30 * DAY)}, ${f.isActive ?? true}, ${f.externalAppId ?? null})
    returning id`;
  return row!.id;
}

export interface QuestFields {
  ownerId: string;
  campaignId?: number | null;
  name?: string;
  description?: string;
  startAt?: Date;
  endAt?: Date;
  isPublic?: boolean;
  actionStatus?: 'active' | 'deactivated';
  totalPoints?: number;
  pointsRemaining?: number;
  expectedPointsPerCompletion?: number;
}

/** One quest; active now (started an hour ago, ends in a day) unless told otherwise. */
export async function createQuest(sql: Sql, f: QuestFields): Promise<number> {
  const [id] = await createQuests(sql, 1, f);
  return id!;
}

/** `count` quests of one owner with the same fields, in id order. */
export async function createQuests(sql: Sql, count: number, f: QuestFields): Promise<number[]> {
  const total = f.totalPoints ?? 1000;
  const rows = await sql<{ id: number }[]>`
    insert into quests (owner_id, campaign_id, name, description, start_at, end_at, is_public, action_status,
                        total_points, points_remaining, expected_points_per_completion)
    select ${f.ownerId}, ${f.campaignId ?? null}, ${f.name ?? 'Quest'} || case when ${count}::int > 1 then ' ' || n else '' end,
           ${f.description ?? 'Do the thing'}, ${f.startAt ?? new Date(Date.now() - HOUR)}, ${f.endAt ?? new Date(Date.now() + DAY)},
           ${f.isPublic ?? true}, ${f.actionStatus ?? 'active'}, ${total}, ${f.pointsRemaining ?? total},
           ${f.expectedPointsPerCompletion ?? 10}
    from generate_series(1, ${count}::int) n
    order by n
    returning id`;
  return rows.map((r) => r.id).sort((a, b) => a - b);
}

export async function createAccount(
  sql: Sql,
  address: `0x${string}` = randomAddress(),
): Promise<{ id: number; address: `0x${string}` }> {
  const [row] = await sql<{ id: number }[]>`insert into accounts (pass_address) values (${address}) returning id`;
  return { id: row!.id, address };
}

/** `count` fresh accounts with random addresses (EIP-55), in one statement. */
export async function createAccounts(sql: Sql, count: number): Promise<`0x${string}`[]> {
  const addresses = Array.from({ length: count }, randomAddress);
  await sql`insert into accounts (pass_address) select * from unnest(${addresses}::text[])`;
  return addresses;
}

/**
 * Accounts for testAddress(1) … testAddress(count), in slices of 20,000; an address already there
 * is skipped, so seeding again (a second scenario, a larger count) reuses the same accounts.
 */
export async function createNumberedAccounts(sql: Sql, count: number): Promise<`0x${string}`[]> {
  const addresses = Array.from({ length: count }, (_, i) => testAddress(i + 1));
  for (let i = 0; i < addresses.length; i += 20_000) {
    const slice = addresses.slice(i, i + 20_000);
    await sql`insert into accounts (pass_address) select * from unnest(${slice}::text[]) on conflict (pass_address) do nothing`;
  }
  return addresses;
}

export interface SeededPayout {
  id: string;
  amount: number;
  createdAt: Date;
  pass: string;
}

/**
 * Credit `amounts` to the account in this order (so the last one is the newest), keeping the
 * ledger consistent: the quest's budget and the account's balance move with each payout.
 */
export async function createPayouts(
  sql: Sql,
  questId: number,
  account: { id: number; address: string },
  amounts: number[],
  createdAt: (index: number) => Date = (i) => new Date(Date.UTC(2025, 0, 1) + i * 1000),
): Promise<SeededPayout[]> {
  const payouts: SeededPayout[] = [];
  for (const [i, amount] of amounts.entries()) {
    const id = newId('pay');
    const at = createdAt(i);
    await sql`
      insert into payouts (id, quest_id, account_id, amount, request_key, created_at)
      values (${id}, ${questId}, ${account.id}, ${amount}, ${newId('alc')}, ${at})`;
    payouts.push({ id, amount, createdAt: at, pass: account.address });
  }
  const total = amounts.reduce((a, b) => a + b, 0);
  await sql`update quests set points_remaining = points_remaining - ${total} where id = ${questId}`;
  await sql`update accounts set balance = balance + ${total} where id = ${account.id}`;
  return payouts;
}

/**
 * The operator's audit (`quest-admin audit`, `audit()` in @quest/db) over the test's database: one
 * `{ kind, id }` per quest, account or payout that breaks a ledger invariant; empty when it is clean.
 */
export async function auditViolations(sql: Sql): Promise<{ kind: string; id: string }[]> {
  const report = await audit(sql);
  return [
    ...report.quests.map((q) => ({ kind: 'quest', id: String(q.questId) })),
    ...report.accounts.map((a) => ({ kind: 'account', id: String(a.accountId) })),
    ...report.payouts.map((p) => ({ kind: 'payout', id: p.payoutId })),
  ];
}
