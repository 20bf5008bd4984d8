import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getFeatureFlags } from '@quest/db';
import { createAccount } from '@quest/db/accounts';
import { createQuest } from '@quest/db/catalog';
import { createOwner } from '@quest/db/owners';
import { createTestDatabase, type TestDatabase } from '@quest/testing';
import { expectUsageErrors, jsonOf, runCli } from './helpers.ts';

let db: TestDatabase;
const cli = (...args: string[]) => runCli(args, { DATABASE_URL: db.url });
const randomHex = () => randomBytes(20).toString('hex');
const DAY = 86_400_000;

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

describe('quest-admin features', () => {
  it('shows both flags (json and text), sets one or both, and the change is in the database', async () => {
    expect(jsonOf(await cli('features', '--json'))).toEqual({ features: { quests: true, campaigns: true } });

    const off = await cli('features', 'set', 'quests=off', '--json');
    expect(off.code, off.stderr).toBe(0);
    expect(jsonOf(off)).toEqual({ features: { quests: false, campaigns: true } });
    expect(await getFeatureFlags(db.sql)).toEqual({ quests: false, campaigns: true });

    const both = await cli('features', 'set', 'quests=on', 'campaigns=off');
    expect(both.code, both.stderr).toBe(0);
    expect(both.stdout).toBe('feature    state\nquests     on\ncampaigns  off\n');
    expect(await getFeatureFlags(db.sql)).toEqual({ quests: true, campaigns: false });

    const shown = await cli('features');
    expect(shown.stdout).toBe('feature    state\nquests     on\ncampaigns  off\n');
    expect(jsonOf(await cli('features', 'show', '--json'))).toEqual({ features: { quests: true, campaigns: false } });

    await cli('features', 'set', 'campaigns=on');
    expect(await getFeatureFlags(db.sql)).toEqual({ quests: true, campaigns: true });
  });

  it('refuses unknown features, bad values and an empty set as usage errors, changing nothing', async () => {
    await expectUsageErrors(cli, [
      [['features', 'set', 'payouts=on', '--json'], 'Unknown feature "payouts"'],
      [['features', 'set', 'quests=maybe'], '"quests=maybe" is not NAME=on|off'],
      [['features', 'set', 'quests=on', 'quests=off'], 'both on and off'],
      [['features', 'set'], "missing required argument 'assignments'"],
    ]);
    expect(await getFeatureFlags(db.sql)).toEqual({ quests: true, campaigns: true });
  });
});

describe('quest-admin audit', () => {
  it('passes on a consistent ledger and names the corrupted quest, then account, with exit 1', async () => {
    const sql = db.sql;
    const { owner } = await createOwner(sql, { name: 'Audit', pass: `0x${randomHex()}` });
    const window = { startAt: new Date(Date.now() - DAY), endAt: new Date(Date.now() + DAY) };
    const quest = await createQuest(sql, {
      ownerId: owner.id,
      name: 'Q',
      ...window,
      totalPoints: 1000,
      expectedPointsPerCompletion: 10,
    });
    const other = await createQuest(sql, {
      ownerId: owner.id,
      name: 'Q2',
      ...window,
      totalPoints: 50,
      expectedPointsPerCompletion: 5,
    });
    const alice = await createAccount(sql, { pass: `0x${randomHex()}` });
    const bob = await createAccount(sql, { pass: `0x${randomHex()}` });
    // Credits written the way the ledger writes them.
    for (const [q, a, amount] of [
      [quest.id, alice.id, 30],
      [quest.id, bob.id, 12],
      [other.id, alice.id, 5],
    ] as const) {
      await sql.begin(async (tx) => {
        await tx`insert into payouts (id, quest_id, account_id, amount, request_key, created_at)
          values (${`pay_${randomHex()}`}, ${q}, ${a}, ${amount}, ${randomHex()}, now())`;
        await tx`update quests set points_remaining = points_remaining - ${amount} where id = ${q}`;
        await tx`update accounts set balance = balance + ${amount} where id = ${a}`;
      });
    }

    const ok = await cli('audit', '--json');
    expect(ok.code, ok.stderr).toBe(0);
    expect(jsonOf(ok)).toEqual({
      ok: true,
      checked: { quests: 2, accounts: 2, payouts: 3, pointsPaidOut: 47, reversals: 0, pointsReversed: 0 },
      violations: { quests: 0, accounts: 0, payouts: 0 },
      quests: [],
      accounts: [],
      payouts: [],
    });
    const okText = await cli('audit');
    expect(okText.code).toBe(0);
    expect(okText.stdout).toBe(
      'Audit OK: 2 quests, 2 accounts, 3 payouts (47 points paid out); every quest and account balances and nothing is negative.\n',
    );

    await sql`update quests set points_remaining = points_remaining - 1 where id = ${quest.id}`;
    const broken = await cli('audit', '--json');
    expect(broken.code).toBe(1);
    const report = jsonOf(broken);
    expect(report.ok).toBe(false);
    expect(report.violations).toEqual({ quests: 1, accounts: 0, payouts: 0 });
    expect(report.quests).toEqual([
      {
        questId: quest.id,
        totalPoints: 1000,
        pointsRemaining: 957,
        paidOut: 42,
        reversed: 0,
        discrepancy: 1,
        problems: ['total_points <> points_remaining + sum(payouts) - sum(reversals)'],
      },
    ]);
    const brokenText = await cli('audit');
    expect(brokenText.code).toBe(1);
    expect(brokenText.stdout).toMatch(/^Audit FAILED: 1 quest, 0 accounts, 0 payouts break the ledger invariants/);
    expect(brokenText.stdout).toMatch(
      new RegExp(
        `\\n +${quest.id} +1000 +957 +42 +0 +1 +total_points <> points_remaining \\+ sum\\(payouts\\) - sum\\(reversals\\)\\n`,
      ),
    );

    await sql`update quests set points_remaining = points_remaining + 1 where id = ${quest.id}`;
    await sql`update accounts set balance = balance + 3 where id = ${bob.id}`;
    const account = await cli('audit', '--json');
    expect(account.code).toBe(1);
    expect(jsonOf(account)).toMatchObject({
      ok: false,
      violations: { quests: 0, accounts: 1, payouts: 0 },
      quests: [],
      accounts: [
        {
          accountId: bob.id,
          pass: bob.pass,
          balance: 15,
          paidIn: 12,
          reversed: 0,
          discrepancy: 3,
          problems: ['balance <> sum(payouts) - sum(reversals)'],
        },
      ],
    });
    const accountText = await cli('audit');
    expect(accountText.code).toBe(1);
    expect(accountText.stdout).toContain(bob.pass);

    await sql`update accounts set balance = balance - 3 where id = ${bob.id}`;
    expect((await cli('audit')).code).toBe(0);
  });
});
