import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSql, findApiKeyWithQuest, type Sql } from '@quest/db';
import { createAccount, importAccounts } from '@quest/db/accounts';
import { AdminError } from '@quest/db/admin-errors';
import { audit } from '@quest/db/audit';
import { createCampaign, createQuest, setQuestActionStatus } from '@quest/db/catalog';
import { createApiKey, revokeKey } from '@quest/db/keys';
import { createOwner } from '@quest/db/owners';
import { hashApiKey } from '@quest/domain';
import { createTestDatabase, type TestDatabase } from '@quest/testing';

let db: TestDatabase;
let sql: Sql;

beforeAll(async () => {
  db = await createTestDatabase();
  sql = db.sql;
});
afterAll(async () => {
  await db?.drop();
});

const randomHex = () => randomBytes(20).toString('hex');
const DAY = 86_400_000;

async function rejectsWith(promise: Promise<unknown>, code: string): Promise<AdminError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(AdminError);
  expect((error as AdminError).code).toBe(code);
  return error as AdminError;
}

/**
 * The owner a key authenticates as, the way the API looks keys up (findApiKeyWithQuest), or null
 * for an unknown or revoked key. Quest 0 never exists: only the key half of the answer is read.
 */
async function activeOwnerOf(apiKey: string): Promise<string | null> {
  const row = await findApiKeyWithQuest(sql, hashApiKey(apiKey), 0);
  return row && row.revokedAt === null ? row.ownerId : null;
}

/** Credit payouts the way the ledger does: payout row, quest budget down, account balance up. */
async function credit(s: Sql, questId: number, accountId: number, amount: number): Promise<void> {
  await s.begin(async (tx) => {
    await tx`insert into payouts (id, quest_id, account_id, amount, request_key, created_at)
      values (${`pay_${randomHex()}`}, ${questId}, ${accountId}, ${amount}, ${randomHex()}, now())`;
    await tx`update quests set points_remaining = points_remaining - ${amount} where id = ${questId}`;
    await tx`update accounts set balance = balance + ${amount} where id = ${accountId}`;
  });
}

describe('owners and API keys', () => {
  it('stores the owner pass in EIP-55 form whatever the input case', async () => {
    const lower = '0x52908400098527886e0f7030069857d2e4169ee7';
    const { owner } = await createOwner(sql, { name: 'Lower', pass: lower });
    expect(owner.pass).toBe('0x52908400098527886E0F7030069857D2E4169EE7');
    const upper = '0x' + '8617e340b3d01fa5f11f306f4090fd50e238070d'.toUpperCase();
    const { owner: second } = await createOwner(sql, { name: 'Upper', pass: upper });
    expect(second.pass).toBe('0x8617E340B3D01FA5F11F306F4090FD50E238070D');
    const [row] = await sql`select pass_address from owners where id = ${second.id}`;
    expect(row!.pass_address).toBe('0x8617E340B3D01FA5F11F306F4090FD50E238070D');
  });

  it('rejects an invalid pass address and a second owner with the same pass', async () => {
    await rejectsWith(createOwner(sql, { name: 'Bad', pass: '0x1234' }), 'INVALID_ADDRESS');
    await rejectsWith(createOwner(sql, { name: 'Bad', pass: `0x${'g'.repeat(40)}` }), 'INVALID_ADDRESS');
    const pass = `0x${randomHex()}`;
    await createOwner(sql, { name: 'First', pass });
    await rejectsWith(createOwner(sql, { name: 'Second', pass: pass.toUpperCase().replace('0X', '0x') }), 'ALREADY_EXISTS');
    await rejectsWith(createOwner(sql, { name: '  ', pass: `0x${randomHex()}` }), 'INVALID_INPUT');
  });

  it('stores only the SHA-256 of a key and a short display prefix, never the key', async () => {
    const { owner, apiKey, key } = await createOwner(sql, { name: 'Hashing', pass: `0x${randomHex()}` });
    expect(apiKey).toMatch(/^sk_[A-Za-z0-9_-]{43}$/);
    const rows = await sql<
      { id: string; key_hash: Buffer; prefix: string }[]
    >`select * from api_keys where owner_id = ${owner.id}`;
    expect(rows).toHaveLength(1);
    expect(rows[0]!.id).toBe(key.id);
    expect(rows[0]!.key_hash.equals(createHash('sha256').update(apiKey).digest())).toBe(true);
    expect(rows[0]!.prefix).toBe(apiKey.slice(0, 7));
    // The secret part of the key appears nowhere in the table.
    const dump = JSON.stringify(await sql`select id, owner_id, encode(key_hash, 'escape') as h, prefix from api_keys`);
    expect(dump).not.toContain(apiKey.slice(7, 20));
  });

  it('a key authenticates as its owner until revoked; the first revocation time is kept', async () => {
    const { owner, apiKey, key } = await createOwner(sql, { name: 'Lookup', pass: `0x${randomHex()}` });
    expect(await activeOwnerOf(apiKey)).toBe(owner.id);

    const second = await createApiKey(sql, owner.id);
    expect(second.apiKey).not.toBe(apiKey);
    expect(second.key).toMatchObject({ ownerId: owner.id, prefix: second.apiKey.slice(0, 7), revokedAt: null });
    expect(await activeOwnerOf(second.apiKey)).toBe(owner.id);

    const revoked = await revokeKey(sql, { apiKey });
    expect(revoked.alreadyRevoked).toBe(false);
    expect(revoked.key).toMatchObject({ id: key.id, ownerId: owner.id });
    expect(revoked.key.revokedAt).toBeInstanceOf(Date);
    expect(await activeOwnerOf(apiKey)).toBeNull();
    // The owner's other key is unaffected.
    expect(await activeOwnerOf(second.apiKey)).toBe(owner.id);
    // Revoking again, by the full key or by its id, keeps the first revocation time.
    for (const ref of [{ apiKey }, { keyId: key.id }]) {
      const again = await revokeKey(sql, ref);
      expect(again.alreadyRevoked).toBe(true);
      expect(again.key.revokedAt!.getTime()).toBe(revoked.key.revokedAt!.getTime());
    }
    // The id createApiKey returned names the key its secret authenticates.
    expect((await revokeKey(sql, { keyId: second.key.id })).alreadyRevoked).toBe(false);
    expect(await activeOwnerOf(second.apiKey)).toBeNull();
  });

  it('finds no key for an unknown one and refuses to revoke or issue for unknown ones', async () => {
    const unknown = `sk_${randomBytes(32).toString('base64url')}`;
    expect(await findApiKeyWithQuest(sql, hashApiKey(unknown), 0)).toBeUndefined();
    await rejectsWith(revokeKey(sql, { apiKey: unknown }), 'API_KEY_NOT_FOUND');
    await rejectsWith(revokeKey(sql, { apiKey: 'nonsense' }), 'API_KEY_NOT_FOUND');
    await rejectsWith(revokeKey(sql, { keyId: 'key_01jf8q4g0x7m3r6v2k9d1n5bta' }), 'API_KEY_NOT_FOUND');
    await rejectsWith(createApiKey(sql, 'own_missing'), 'OWNER_NOT_FOUND');
  });
});

describe('accounts', () => {
  it('creates an account with a checksummed pass and refuses duplicates and invalid addresses', async () => {
    const hex = randomHex();
    const account = await createAccount(sql, { pass: `0x${hex}` });
    expect(account.pass).toBe((await import('viem')).getAddress(`0x${hex}`));
    expect(account.balance).toBe(0);
    await rejectsWith(createAccount(sql, { pass: `0x${hex.toUpperCase()}` }), 'ALREADY_EXISTS');
    await rejectsWith(createAccount(sql, { pass: 'hello' }), 'INVALID_ADDRESS');
  });

  it('imports in chunks, counting created, skipped (existing or repeated) and invalid rows', async () => {
    const existing = `0x${randomHex()}`;
    await createAccount(sql, { pass: existing });
    const fresh = Array.from({ length: 7 }, () => `0x${randomHex()}`);
    const rows = [
      { line: 2, value: fresh[0]! },
      { line: 3, value: existing.toUpperCase().replace('0X', '0x') },
      { line: 4, value: 'nope' },
      { line: 5, value: fresh[1]! },
      { line: 6, value: fresh[0]!.toUpperCase().replace('0X', '0x') }, // same as line 2
      ...fresh.slice(2).map((value, i) => ({ line: 7 + i, value })),
      { line: 12, value: '0x12' },
    ];
    const progress: number[] = [];
    const result = await importAccounts(sql, rows, { chunkSize: 3, onProgress: (p) => progress.push(p.processed) });
    expect(result).toMatchObject({ created: 7, skipped: 2, invalid: 2, processed: 11 });
    expect(result.invalidRows).toEqual([
      { line: 4, value: 'nope' },
      { line: 12, value: '0x12' },
    ]);
    expect(progress.length).toBeGreaterThanOrEqual(3);
    const stored = await sql<
      { pass_address: string }[]
    >`select pass_address from accounts where lower(pass_address) = any(${sql.array(fresh.map((f) => f.toLowerCase()))})`;
    expect(stored).toHaveLength(7);
    for (const { pass_address } of stored) expect(pass_address).not.toBe(pass_address.toLowerCase());

    // Running the same import again creates nothing.
    const rerun = await importAccounts(sql, rows, { chunkSize: 4 });
    expect(rerun).toMatchObject({ created: 0, skipped: 9, invalid: 2 });
  });

  it('imports through a pool whose first query is the import', async () => {
    const fresh = createSql(db.url, { max: 2 });
    try {
      const addresses = Array.from({ length: 5 }, () => `0x${randomHex()}`);
      expect(await importAccounts(fresh, addresses)).toMatchObject({ created: 5, skipped: 0, invalid: 0 });
    } finally {
      await fresh.end();
    }
  });

  it('caps the invalid-row report but counts every invalid row', async () => {
    const rows = Array.from({ length: 30 }, (_, i) => `bad-${i}`);
    const result = await importAccounts(sql, rows, { maxInvalidRows: 5 });
    expect(result.invalid).toBe(30);
    expect(result.invalidRows).toHaveLength(5);
    expect(result.invalidRows[0]).toEqual({ line: 1, value: 'bad-0' });
  });

  it('imports an async stream in chunks, each written once, reporting progress after every chunk', async () => {
    // Several chunks, the last one partial, read from a stream while the previous one is written.
    // (How fast 100,000 rows go is measured by `npm run bench -- --scenario admin`.)
    const chunkSize = 2000;
    const addresses = Array.from({ length: 5 * chunkSize + 500 }, () => `0x${randomHex()}`);
    async function* stream() {
      for (const [i, value] of addresses.entries()) yield { line: i + 2, value };
    }
    const progress: number[] = [];
    const result = await importAccounts(sql, stream(), { chunkSize, onProgress: (p) => progress.push(p.processed) });
    expect(result).toMatchObject({ created: addresses.length, skipped: 0, invalid: 0, processed: addresses.length });
    expect(progress).toEqual([1, 2, 3, 4, 5].map((k) => k * chunkSize).concat(addresses.length));
    const [row] = await sql<{ n: number }[]>`
      select count(*)::int as n from accounts where lower(pass_address) = any(${sql.array(addresses)})`;
    expect(row!.n).toBe(addresses.length);
  });
});

describe('campaigns and quests', () => {
  it('creates a quest with its whole budget remaining, in a campaign', async () => {
    const { owner } = await createOwner(sql, { name: 'Quest owner', pass: `0x${randomHex()}` });
    const start = new Date('2030-01-01T00:00:00Z');
    const end = new Date(start.getTime() + 30 * DAY);
    const campaign = await createCampaign(sql, {
      name: 'C',
      description: 'camp',
      startAt: start,
      endAt: end,
      externalAppId: 'app-1',
    });
    expect(campaign).toMatchObject({ name: 'C', description: 'camp', isActive: true, externalAppId: 'app-1' });
    const inactive = await createCampaign(sql, { name: 'C2', startAt: start, endAt: end, isActive: false });
    expect(inactive.isActive).toBe(false);
    expect(inactive.externalAppId).toBeNull();

    const quest = await createQuest(sql, {
      ownerId: owner.id,
      campaignId: campaign.id,
      name: 'Q',
      description: 'do it',
      startAt: start,
      endAt: end,
      totalPoints: 5000,
      expectedPointsPerCompletion: 50,
      isPublic: false,
    });
    expect(quest).toMatchObject({
      ownerId: owner.id,
      campaignId: campaign.id,
      totalPoints: 5000,
      pointsRemaining: 5000,
      expectedPointsPerCompletion: 50,
      isPublic: false,
      actionStatus: 'active',
    });
    expect(quest.startAt.toISOString()).toBe(start.toISOString());
  });

  it('names the unknown owner or campaign and refuses bad windows and points', async () => {
    const { owner } = await createOwner(sql, { name: 'Strict', pass: `0x${randomHex()}` });
    const base = {
      ownerId: owner.id,
      name: 'Q',
      startAt: new Date('2030-01-01T00:00:00Z'),
      endAt: new Date('2030-02-01T00:00:00Z'),
      totalPoints: 10,
      expectedPointsPerCompletion: 1,
    };
    expect((await rejectsWith(createQuest(sql, { ...base, ownerId: 'own_nobody' }), 'OWNER_NOT_FOUND')).message).toContain(
      'own_nobody',
    );
    expect((await rejectsWith(createQuest(sql, { ...base, campaignId: 987654 }), 'CAMPAIGN_NOT_FOUND')).message).toContain(
      '987654',
    );
    await rejectsWith(createQuest(sql, { ...base, endAt: base.startAt }), 'INVALID_INPUT');
    await rejectsWith(createQuest(sql, { ...base, totalPoints: -1 }), 'INVALID_INPUT');
    await rejectsWith(createQuest(sql, { ...base, totalPoints: 2 ** 53 }), 'INVALID_INPUT');
    await rejectsWith(createQuest(sql, { ...base, expectedPointsPerCompletion: 1.5 }), 'INVALID_INPUT');
    await rejectsWith(createCampaign(sql, { name: 'C', startAt: base.endAt, endAt: base.startAt }), 'INVALID_INPUT');
    const [{ n }] = (await sql`select count(*)::int as n from quests where owner_id = ${owner.id}`) as unknown as [{ n: number }];
    expect(n).toBe(0);
  });

  it('switches the action status and reports an unknown quest', async () => {
    const { owner } = await createOwner(sql, { name: 'Switch', pass: `0x${randomHex()}` });
    const quest = await createQuest(sql, {
      ownerId: owner.id,
      name: 'Q',
      startAt: new Date(),
      endAt: new Date(Date.now() + DAY),
      totalPoints: 1,
      expectedPointsPerCompletion: 1,
    });
    expect((await setQuestActionStatus(sql, quest.id, 'deactivated')).actionStatus).toBe('deactivated');
    const [row] = await sql`select action_status from quests where id = ${quest.id}`;
    expect(row!.action_status).toBe('deactivated');
    expect((await setQuestActionStatus(sql, quest.id, 'active')).actionStatus).toBe('active');
    await rejectsWith(setQuestActionStatus(sql, 99_999_999, 'active'), 'QUEST_NOT_FOUND');
  });
});

describe('audit', () => {
  it('passes on a consistent ledger and names the quest and account a corruption breaks', async () => {
    // Its own database: the audit looks at every row.
    const own = await createTestDatabase();
    try {
      const s = own.sql;
      const { owner } = await createOwner(s, { name: 'Audited', pass: `0x${randomHex()}` });
      const window = { startAt: new Date(Date.now() - DAY), endAt: new Date(Date.now() + DAY) };
      const q1 = await createQuest(s, {
        ownerId: owner.id,
        name: 'Q1',
        ...window,
        totalPoints: 1000,
        expectedPointsPerCompletion: 10,
      });
      const q2 = await createQuest(s, {
        ownerId: owner.id,
        name: 'Q2',
        ...window,
        totalPoints: 500,
        expectedPointsPerCompletion: 10,
      });
      const a1 = await createAccount(s, { pass: `0x${randomHex()}` });
      const a2 = await createAccount(s, { pass: `0x${randomHex()}` });
      await credit(s, q1.id, a1.id, 10);
      await credit(s, q1.id, a2.id, 25);
      await credit(s, q2.id, a1.id, 7);

      const clean = await audit(s);
      expect(clean).toMatchObject({
        ok: true,
        checked: { quests: 2, accounts: 2, payouts: 3, pointsPaidOut: 42, reversals: 0, pointsReversed: 0 },
        violations: { quests: 0, accounts: 0, payouts: 0 },
        quests: [],
        accounts: [],
      });

      await s`update quests set points_remaining = points_remaining - 1 where id = ${q1.id}`;
      const broken = await audit(s);
      expect(broken.ok).toBe(false);
      expect(broken.violations).toEqual({ quests: 1, accounts: 0, payouts: 0 });
      expect(broken.quests).toEqual([
        {
          questId: q1.id,
          totalPoints: 1000,
          pointsRemaining: 964,
          paidOut: 35,
          reversed: 0,
          discrepancy: 1,
          problems: ['total_points <> points_remaining + sum(payouts) - sum(reversals)'],
        },
      ]);

      await s`update quests set points_remaining = points_remaining + 1 where id = ${q1.id}`;
      await s`update accounts set balance = balance + 5 where id = ${a2.id}`;
      const account = await audit(s);
      expect(account.ok).toBe(false);
      expect(account.quests).toEqual([]);
      expect(account.accounts).toEqual([
        {
          accountId: a2.id,
          pass: a2.pass,
          balance: 30,
          paidIn: 25,
          reversed: 0,
          discrepancy: 5,
          problems: ['balance <> sum(payouts) - sum(reversals)'],
        },
      ]);

      // A negative value is caught even when the sums agree (constraints dropped to simulate damage).
      await s`update accounts set balance = balance - 5 where id = ${a2.id}`;
      await s.unsafe('alter table payouts drop constraint payouts_amount_check');
      await s.unsafe('alter table accounts drop constraint accounts_balance_check');
      await s`update payouts set amount = -amount where account_id = ${a1.id}`;
      await s`update accounts set balance = -17 where id = ${a1.id}`;
      const negative = await audit(s);
      expect(negative.ok).toBe(false);
      expect(negative.violations).toEqual({ quests: 2, accounts: 1, payouts: 2 });
      expect(negative.payouts.map((p) => [p.questId, p.accountId, p.amount])).toEqual(
        expect.arrayContaining([
          [q1.id, a1.id, -10],
          [q2.id, a1.id, -7],
        ]),
      );
      expect(negative.accounts).toEqual([
        { accountId: a1.id, pass: a1.pass, balance: -17, paidIn: -17, reversed: 0, discrepancy: 0, problems: ['balance < 0'] },
      ]);
      expect(negative.quests.map((q) => [q.questId, q.discrepancy])).toEqual([
        [q1.id, 20],
        [q2.id, 14],
      ]);
    } finally {
      await own.drop();
    }
  });

  it('counts reversals: total = remaining + paid − reversed, balance = paid − reversed, no payout over-reversed', async () => {
    const own = await createTestDatabase();
    try {
      const s = own.sql;
      const { owner } = await createOwner(s, { name: 'Reversed', pass: `0x${randomHex()}` });
      const q = await createQuest(s, {
        ownerId: owner.id,
        name: 'Q',
        startAt: new Date(Date.now() - DAY),
        endAt: new Date(Date.now() + DAY),
        totalPoints: 100,
        expectedPointsPerCompletion: 1,
      });
      const a = await createAccount(s, { pass: `0x${randomHex()}` });
      await credit(s, q.id, a.id, 40);
      const [payout] = await s<{ id: string }[]>`select id from payouts where quest_id = ${q.id}`;
      // Written the way the ledger writes a reversal: the row, the budget back, the balance down.
      const reverse = (amount: number, ledger = true) =>
        s.begin(async (tx) => {
          await tx`insert into reversals (id, quest_id, payout_id, account_id, amount, created_at)
            values (${`rev_${randomHex()}`}, ${q.id}, ${payout!.id}, ${a.id}, ${amount}, now())`;
          if (!ledger) return;
          await tx`update quests set points_remaining = points_remaining + ${amount} where id = ${q.id}`;
          await tx`update accounts set balance = balance - ${amount} where id = ${a.id}`;
        });
      await reverse(15);
      await reverse(25);
      const clean = await audit(s);
      expect(clean).toMatchObject({
        ok: true,
        checked: { quests: 1, accounts: 1, payouts: 1, pointsPaidOut: 40, reversals: 2, pointsReversed: 40 },
      });

      // A reversal row without its ledger moves, taking the payout past its amount.
      await reverse(1, false);
      const broken = await audit(s);
      expect(broken.violations).toEqual({ quests: 1, accounts: 1, payouts: 1 });
      expect(broken.quests).toEqual([
        {
          questId: q.id,
          totalPoints: 100,
          pointsRemaining: 100,
          paidOut: 40,
          reversed: 41,
          discrepancy: 1,
          problems: ['total_points <> points_remaining + sum(payouts) - sum(reversals)'],
        },
      ]);
      expect(broken.accounts).toEqual([
        {
          accountId: a.id,
          pass: a.pass,
          balance: 0,
          paidIn: 40,
          reversed: 41,
          discrepancy: 1,
          problems: ['balance <> sum(payouts) - sum(reversals)'],
        },
      ]);
      expect(broken.payouts).toEqual([
        { payoutId: payout!.id, questId: q.id, accountId: a.id, amount: 40, reversed: 41, problems: ['sum(reversals) > amount'] },
      ]);
    } finally {
      await own.drop();
    }
  });

  it('checks every payout in one set-based pass, counting all violations while listing at most `limit`', async () => {
    // (How fast it checks 1,000,000 payouts is measured by `npm run bench -- --scenario admin`.)
    const QUESTS = 50;
    const ACCOUNTS = 2_000;
    const PAYOUTS = 50_000;
    const own = await createTestDatabase();
    try {
      const s = own.sql;
      const { owner } = await createOwner(s, { name: 'Big', pass: `0x${randomHex()}` });
      // QUESTS quests × PAYOUTS / QUESTS payouts over ACCOUNTS accounts, written directly with set-based SQL.
      await s`insert into quests (owner_id, name, start_at, end_at, total_points, points_remaining)
        select ${owner.id}, 'Q' || g, now(), now() + interval '1 day', 10000000, 10000000 from generate_series(1, ${QUESTS}::int) g`;
      await s`insert into accounts (pass_address) select '0x' || lpad(to_hex(g), 40, '0') from generate_series(1, ${ACCOUNTS}::int) g`;
      await s`
        insert into payouts (id, quest_id, account_id, amount, request_key, created_at)
        select 'pay_' || g, q.min_id + (g % ${QUESTS}::int), a.min_id + (g % ${ACCOUNTS}::int), 1 + g % 7, 'k' || g, now()
        from generate_series(1, ${PAYOUTS}::int) g, (select min(id) as min_id from quests) q, (select min(id) as min_id from accounts) a`;
      await s`update quests q set points_remaining = q.total_points - p.paid from (select quest_id, sum(amount) as paid from payouts group by quest_id) p where p.quest_id = q.id`;
      await s`update accounts a set balance = p.paid from (select account_id, sum(amount) as paid from payouts group by account_id) p where p.account_id = a.id`;
      const [{ paid }] = (await s`select sum(amount)::int8 as paid from payouts`) as unknown as [{ paid: string }];

      const clean = await audit(s);
      expect(clean.ok).toBe(true);
      expect(clean.checked).toEqual({
        quests: QUESTS,
        accounts: ACCOUNTS,
        payouts: PAYOUTS,
        pointsPaidOut: Number(paid),
        reversals: 0,
        pointsReversed: 0,
      });

      await s`update accounts set balance = balance + 1 where id in (select id from accounts order by id limit 3)`;
      await s`update quests set points_remaining = points_remaining - 1 where id in (select id from quests order by id desc limit 4)`;
      const broken = await audit(s, { limit: 2 });
      expect(broken.ok).toBe(false);
      expect(broken.violations).toEqual({ quests: 4, accounts: 3, payouts: 0 });
      expect(broken.accounts).toHaveLength(2);
      expect(broken.quests).toHaveLength(2);
      expect(broken.accounts.map((a) => a.discrepancy)).toEqual([1, 1]);
    } finally {
      await own.drop();
    }
  });
});
