import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '@quest/testing';
import { expectFailure, expectUsageError, expectUsageErrors, jsonOf, runCli } from './helpers.ts';

let db: TestDatabase;
let ownerId: string;
const cli = (...args: string[]) => runCli(args, { DATABASE_URL: db.url });

beforeAll(async () => {
  db = await createTestDatabase();
  const out = jsonOf(
    await cli('owner', 'create', '--name', 'Quest owner', '--pass', `0x${randomBytes(20).toString('hex')}`, '--json'),
  );
  ownerId = out.owner.id;
});
afterAll(async () => {
  await db?.drop();
});

const WINDOW = ['--start', '2030-01-01T00:00:00Z', '--end', '2030-01-31T00:00:00+01:00'];

describe('quest-admin campaign create', () => {
  it('--json creates an active campaign with an external app id', async () => {
    const result = await cli(
      'campaign',
      'create',
      '--name',
      'Summer',
      '--description',
      'Summer quests',
      ...WINDOW,
      '--external-app-id',
      'app-42',
      '--json',
    );
    expect(result.code, result.stderr).toBe(0);
    const { campaign } = jsonOf(result);
    expect(campaign).toEqual({
      id: expect.any(Number),
      name: 'Summer',
      description: 'Summer quests',
      start: '2030-01-01T00:00:00.000Z',
      end: '2030-01-30T23:00:00.000Z',
      isActive: true,
      externalAppId: 'app-42',
    });
    const [row] =
      await db.sql`select name, description, start_at, end_at, is_active, external_app_id from campaigns where id = ${campaign.id}`;
    expect(row).toEqual({
      name: 'Summer',
      description: 'Summer quests',
      start_at: new Date('2030-01-01T00:00:00Z'),
      end_at: new Date('2030-01-30T23:00:00Z'),
      is_active: true,
      external_app_id: 'app-42',
    });
  });

  it('prints text; --inactive stores an inactive campaign without an app id', async () => {
    const result = await cli(
      'campaign',
      'create',
      '--name',
      'Dormant',
      '--description',
      'later',
      '--start',
      '2031-01-01',
      '--end',
      '2031-02-01',
      '--inactive',
    );
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^Campaign created\n/);
    expect(result.stdout).toMatch(/ {2}active +no\n/);
    const id = Number(/ {2}id +(\d+)/.exec(result.stdout)![1]);
    const [row] = await db.sql`select name, is_active, external_app_id from campaigns where id = ${id}`;
    expect(row).toEqual({ name: 'Dormant', is_active: false, external_app_id: null });
  });

  it('refuses bad dates and an end not after the start, as usage errors', async () => {
    const base = ['campaign', 'create', '--name', 'X', '--description', 'd'];
    await expectUsageErrors(cli, [
      [[...base, '--start', 'next monday', '--end', '2030-01-01'], "option '--start <iso>' argument 'next monday' is invalid"],
      [[...base, '--start', '2030-01-01', '--end', '2030-02-30'], 'No such calendar date'],
      [
        [...base, '--start', '2030-01-02', '--end', '2030-01-01', '--json'],
        '--end (2030-01-01T00:00:00.000Z) must be after --start',
      ],
      [[...base, '--start', '2030-01-01'], "required option '--end <iso>' not specified"],
    ]);
    const [{ n }] = (await db.sql`select count(*)::int as n from campaigns where name = 'X'`) as unknown as [{ n: number }];
    expect(n).toBe(0);
  });
});

describe('quest-admin quest create', () => {
  it('--json creates a quest in a campaign with its whole budget remaining', async () => {
    const { campaign } = jsonOf(await cli('campaign', 'create', '--name', 'C', '--description', 'd', ...WINDOW, '--json'));
    const result = await cli(
      'quest',
      'create',
      '--owner',
      ownerId,
      '--campaign',
      String(campaign.id),
      '--name',
      'Daily check-in',
      '--description',
      'Check in',
      ...WINDOW,
      '--total-points',
      '100000',
      '--expected-points',
      '10',
      '--json',
    );
    expect(result.code, result.stderr).toBe(0);
    const { quest } = jsonOf(result);
    expect(quest).toMatchObject({
      id: expect.any(Number),
      ownerId,
      campaignId: campaign.id,
      name: 'Daily check-in',
      description: 'Check in',
      start: '2030-01-01T00:00:00.000Z',
      end: '2030-01-30T23:00:00.000Z',
      isPublic: true,
      actionStatus: 'active',
      totalPoints: 100000,
      pointsRemaining: 100000,
      expectedPointsPerCompletion: 10,
    });
    const [row] = await db.sql`
      select owner_id, campaign_id, total_points, points_remaining, expected_points_per_completion, is_public, action_status
      from quests where id = ${quest.id}`;
    expect(row).toEqual({
      owner_id: ownerId,
      campaign_id: campaign.id,
      total_points: 100000,
      points_remaining: 100000,
      expected_points_per_completion: 10,
      is_public: true,
      action_status: 'active',
    });
  });

  it('prints text; --private stores a private quest without a campaign', async () => {
    const result = await cli(
      'quest',
      'create',
      '--owner',
      ownerId,
      '--name',
      'Secret',
      '--description',
      'hidden',
      ...WINDOW,
      '--total-points',
      '0',
      '--expected-points',
      '0',
      '--private',
    );
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^Quest created\n/);
    expect(result.stdout).toMatch(/ {2}public +no\n/);
    const id = Number(/ {2}id +(\d+)/.exec(result.stdout)![1]);
    const [row] = await db.sql`select is_public, campaign_id, total_points, points_remaining from quests where id = ${id}`;
    expect(row).toEqual({ is_public: false, campaign_id: null, total_points: 0, points_remaining: 0 });
  });

  it('names an unknown owner or campaign in one error line (and in JSON)', async () => {
    const args = ['--name', 'Q', '--description', 'd', ...WINDOW, '--total-points', '10', '--expected-points', '1'];
    const owner = await cli('quest', 'create', '--owner', 'own_01jf8q4g0x7m3r6v2k9d1n5bta', ...args, '--json');
    expectFailure(owner, 'owner "own_01jf8q4g0x7m3r6v2k9d1n5bta" not found');
    expect(jsonOf(owner).error.code).toBe('OWNER_NOT_FOUND');
    const campaign = await cli('quest', 'create', '--owner', ownerId, '--campaign', '424242', ...args);
    expectFailure(campaign, 'campaign 424242 not found');
    expect(campaign.stdout).toBe('');
  });

  it('refuses bad numbers, dates and windows as usage errors', async () => {
    const base = ['quest', 'create', '--owner', ownerId, '--name', 'Q', '--description', 'd'];
    const points = ['--total-points', '10', '--expected-points', '1'];
    await expectUsageErrors(cli, [
      [
        [...base, ...WINDOW, '--total-points', '-5', '--expected-points', '1'],
        "option '--total-points <n>' argument '-5' is invalid",
      ],
      [[...base, ...WINDOW, '--total-points', '1.5', '--expected-points', '1'], 'non-negative integer'],
      [[...base, ...WINDOW, '--total-points', '9007199254740992', '--expected-points', '1'], 'at most 9007199254740991'],
      [
        [...base, ...WINDOW, '--total-points', '10', '--expected-points', 'ten'],
        "option '--expected-points <n>' argument 'ten' is invalid",
      ],
      [[...base, '--start', '2030-01-01T10:00:00', '--end', '2030-02-01', ...points], 'with a zone'],
      [[...base, '--start', '2030-02-01', '--end', '2030-02-01', ...points], 'must be after --start'],
      [[...base, ...WINDOW, ...points, '--campaign', 'abc'], "option '--campaign <campaignId>' argument 'abc' is invalid"],
      [['quest', 'create', '--owner', ownerId, ...WINDOW, ...points], "required option '--name <name>' not specified"],
    ]);
  });
});

describe('quest-admin quest action', () => {
  it('switches the action status (json and text) and reports an unknown quest', async () => {
    const { quest } = jsonOf(
      await cli(
        'quest',
        'create',
        '--owner',
        ownerId,
        '--name',
        'Toggle',
        '--description',
        'd',
        ...WINDOW,
        '--total-points',
        '5',
        '--expected-points',
        '1',
        '--json',
      ),
    );
    const off = await cli('quest', 'action', '--id', String(quest.id), '--status', 'deactivated', '--json');
    expect(off.code, off.stderr).toBe(0);
    expect(jsonOf(off)).toEqual({ quest: { id: quest.id, actionStatus: 'deactivated' } });
    const [row] = await db.sql`select action_status from quests where id = ${quest.id}`;
    expect(row!.action_status).toBe('deactivated');

    const on = await cli('quest', 'action', '--id', String(quest.id), '--status', 'active');
    expect(on.code, on.stderr).toBe(0);
    expect(on.stdout).toBe(`Quest ${quest.id} action status: active\n`);
    const [after] = await db.sql`select action_status from quests where id = ${quest.id}`;
    expect(after!.action_status).toBe('active');

    const unknown = await cli('quest', 'action', '--id', '999999', '--status', 'active', '--json');
    expectFailure(unknown, 'quest 999999 not found');
    expect(jsonOf(unknown).error.code).toBe('QUEST_NOT_FOUND');
    expectUsageError(await cli('quest', 'action', '--id', String(quest.id), '--status', 'paused'), 'active, deactivated');
    expectUsageError(
      await cli('quest', 'action', '--id', '0', '--status', 'active'),
      "option '--id <questId>' argument '0' is invalid",
    );
  });
});

describe('quest-admin quest update --budget-low-threshold', () => {
  it('sets the threshold at creation, changes it, and puts back the default', async () => {
    const created = await cli(
      'quest',
      'create',
      '--owner',
      ownerId,
      '--name',
      'Alerting',
      '--description',
      'd',
      ...WINDOW,
      '--total-points',
      '1000',
      '--expected-points',
      '1',
      '--budget-low-threshold',
      '250',
      '--json',
    );
    expect(created.code, created.stderr).toBe(0);
    const { quest } = jsonOf(created);
    expect(quest.budgetLowThreshold).toBe(250);
    const threshold = async () =>
      (await db.sql<{ t: string | null }[]>`select budget_low_threshold::text as t from quests where id = ${quest.id}`)[0]!.t;
    expect(await threshold()).toBe('250');

    const set = await cli('quest', 'update', '--id', String(quest.id), '--budget-low-threshold', '40', '--json');
    expect(set.code, set.stderr).toBe(0);
    expect(jsonOf(set)).toEqual({ quest: { id: quest.id, totalPoints: 1000, budgetLowThreshold: 40 } });
    expect(await threshold()).toBe('40');

    const reset = await cli('quest', 'update', '--id', String(quest.id), '--budget-low-threshold', 'default');
    expect(reset.code, reset.stderr).toBe(0);
    expect(reset.stdout).toBe(`Quest ${quest.id} budget low threshold: default (10 % of 1000)\n`);
    expect(await threshold()).toBe(null);

    expectFailure(
      await cli('quest', 'update', '--id', '999999', '--budget-low-threshold', '1', '--json'),
      'quest 999999 not found',
    );
    expectUsageError(
      await cli('quest', 'update', '--id', String(quest.id), '--budget-low-threshold', 'some'),
      'Expected a non-negative integer.',
    );
  });
});
