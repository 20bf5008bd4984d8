import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount } from '@quest/db/accounts';
import { createCampaign, createQuest } from '@quest/db/catalog';
import { createOwner } from '@quest/db/owners';
import { createTestDatabase, type TestDatabase } from '@quest/testing';
import { expectFailure, expectUsageErrors, jsonOf, runCli } from './helpers.ts';

let db: TestDatabase;
const cli = (...args: string[]) => runCli(args, { DATABASE_URL: db.url });
const address = () => `0x${randomBytes(20).toString('hex')}`;
const start = new Date('2030-01-01T00:00:00Z');
const end = new Date('2030-02-01T00:00:00Z');

let owners: string[];
let campaigns: number[];
let quests: number[];

beforeAll(async () => {
  db = await createTestDatabase();
  owners = [];
  for (let i = 0; i < 2; i++) owners.push((await createOwner(db.sql, { name: `Owner ${i}`, pass: address() })).owner.id);
  campaigns = [];
  for (let i = 0; i < 2; i++) {
    campaigns.push((await createCampaign(db.sql, { name: `Campaign ${i}`, startAt: start, endAt: end, isActive: i === 0 })).id);
  }
  quests = [];
  // Owner 0: a public quest in campaign 0, a private one in no campaign; owner 1: one in campaign 1.
  for (const [owner, campaign, isPublic] of [
    [owners[0]!, campaigns[0]!, true],
    [owners[0]!, null, false],
    [owners[1]!, campaigns[1]!, true],
  ] as const) {
    const q = await createQuest(db.sql, {
      ownerId: owner,
      campaignId: campaign,
      name: `Quest of ${owner.slice(-4)}`,
      startAt: start,
      endAt: end,
      totalPoints: 1000,
      expectedPointsPerCompletion: 10,
      isPublic,
    });
    quests.push(q.id);
  }
  for (let i = 0; i < 3; i++) await createAccount(db.sql, { pass: address() });
});
afterAll(async () => {
  await db?.drop();
});

describe('quest-admin quest list', () => {
  it('lists public and private quests, filtered by owner and by campaign (json)', async () => {
    const [all, ofOwner, ofCampaign, both] = await Promise.all([
      cli('quest', 'list', '--json'),
      cli('quest', 'list', '--owner', owners[0]!, '--json'),
      cli('quest', 'list', '--campaign', String(campaigns[1]), '--json'),
      cli('quest', 'list', '--owner', owners[0]!, '--campaign', String(campaigns[1]), '--json'),
    ]);
    expect(jsonOf(all)).toEqual({
      quests: quests.map((id, i) => ({
        id,
        ownerId: owners[i === 2 ? 1 : 0],
        campaignId: [campaigns[0], null, campaigns[1]][i],
        name: expect.stringMatching(/^Quest of /),
        start: start.toISOString(),
        end: end.toISOString(),
        isPublic: i !== 1,
        actionStatus: 'active',
        totalPoints: 1000,
        pointsRemaining: 1000,
      })),
      next: null,
    });
    expect(jsonOf(ofOwner).quests.map((q: { id: number }) => q.id)).toEqual(quests.slice(0, 2));
    expect(jsonOf(ofCampaign).quests.map((q: { id: number }) => q.id)).toEqual([quests[2]]);
    expect(jsonOf(both)).toEqual({ quests: [], next: null });
  });

  it('pages with --limit/--after, prints a table, and names an unknown campaign', async () => {
    const first = jsonOf(await cli('quest', 'list', '--limit', '2', '--json'));
    expect(first.quests.map((q: { id: number }) => q.id)).toEqual(quests.slice(0, 2));
    expect(first.next).toBe(quests[1]);
    const rest = jsonOf(await cli('quest', 'list', '--limit', '2', '--after', String(first.next), '--json'));
    expect(rest).toMatchObject({ quests: [{ id: quests[2] }], next: null });

    const text = await cli('quest', 'list', '--owner', owners[0]!, '--limit', '1');
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/^ID +NAME +OWNER +CAMPAIGN +PUBLIC +ACTION +REMAINING +TOTAL +END\n/);
    expect(text.stdout).toContain(`1 quest shown; more: quest-admin quest list --owner ${owners[0]} --after ${quests[0]}`);

    const unknown = await cli('quest', 'list', '--campaign', '999999', '--json');
    expectFailure(unknown, 'campaign 999999 not found');
    expect(jsonOf(unknown).error.code).toBe('CAMPAIGN_NOT_FOUND');
  });
});

describe('quest-admin campaign list / account list', () => {
  it('lists campaigns with their quest counts, and accounts with their balances', async () => {
    const [campaignJson, campaignText, accountJson, accountPage] = await Promise.all([
      cli('campaign', 'list', '--json'),
      cli('campaign', 'list'),
      cli('account', 'list', '--json'),
      cli('account', 'list', '--limit', '2', '--json'),
    ]);
    expect(jsonOf(campaignJson)).toEqual({
      campaigns: campaigns.map((id, i) => ({
        id,
        name: `Campaign ${i}`,
        description: '',
        start: start.toISOString(),
        end: end.toISOString(),
        isActive: i === 0,
        externalAppId: null,
        quests: 1,
      })),
      next: null,
    });
    expect(campaignText.stdout).toMatch(/^ID +NAME +START +END +ACTIVE +QUESTS\n/);
    expect(campaignText.stdout).toContain('\n2 campaigns.\n');

    const accounts = jsonOf(accountJson);
    expect(accounts.next).toBeNull();
    expect(accounts.accounts).toHaveLength(3);
    for (const a of accounts.accounts) {
      expect(a).toEqual({
        id: expect.any(Number),
        pass: expect.stringMatching(/^0x[0-9a-fA-F]{40}$/),
        balance: 0,
        createdAt: expect.any(String),
      });
    }
    const page = jsonOf(accountPage);
    expect(page.accounts).toEqual(accounts.accounts.slice(0, 2));
    expect(page.next).toBe(accounts.accounts[1].id);
  });

  it('refuses bad cursors and limits as usage errors (in JSON too)', async () => {
    await expectUsageErrors(cli, [
      [['campaign', 'list', '--after', 'x'], "option '--after <campaignId>' argument 'x' is invalid"],
      [['account', 'list', '--after', '-1', '--json'], "option '--after <accountId>' argument '-1' is invalid"],
      [['quest', 'list', '--limit', 'many', '--json'], "option '--limit <n>' argument 'many' is invalid"],
    ]);
  });
});
