import { randomBytes } from 'node:crypto';
import { createAccount } from '@quest/db/accounts';
import { createCampaign, createQuest } from '@quest/db/catalog';
import { createOwner } from '@quest/db/owners';
import type { CommandOutput, Context } from '../context.ts';
import { demoCurls, shellQuote } from '../curl.ts';
import { renderFields } from '../format.ts';

const DAY = 86_400_000;
const randomAddress = () => `0x${randomBytes(20).toString('hex')}`;

/** The shell variables `demo --env` sets: the names every command in README.md and docs/ uses. */
export const DEMO_SHELL_VARIABLES = [
  'BASE',
  'KEY',
  'OWNER',
  'CAMPAIGN',
  'QUEST',
  'PRIVATE_QUEST',
  'ADDRESS',
  'ADDRESS2',
  'ADDRESS3',
] as const;

/** `export NAME=value` lines a POSIX shell can `eval`, values quoted. */
export function exportLines(vars: Record<(typeof DEMO_SHELL_VARIABLES)[number], string>): string {
  return DEMO_SHELL_VARIABLES.map((name) => `export ${name}=${shellQuote(vars[name])}`).join('\n');
}

type Sql = Awaited<ReturnType<Context['db']>>;

/** The demo's rows: an owner with a key, a campaign, a public and a private quest, three accounts. */
async function createDemoData(sql: Sql) {
  // Start on the current minute: already inside the window, and easy to read.
  const start = new Date(Math.floor(Date.now() / 60_000) * 60_000);
  const end = new Date(start.getTime() + 30 * DAY);
  const tag = randomBytes(2).toString('hex');
  const { owner, apiKey } = await createOwner(sql, { name: `Demo owner ${tag}`, pass: randomAddress() });
  const campaign = await createCampaign(sql, {
    name: `Demo campaign ${tag}`,
    description: 'Quests created by quest-admin demo.',
    startAt: start,
    endAt: end,
  });
  const window = { ownerId: owner.id, campaignId: campaign.id, startAt: start, endAt: end };
  const liveQuest = await createQuest(sql, {
    ...window,
    name: `Daily check-in ${tag}`,
    description: 'Check in once a day. Public, active for 30 days.',
    totalPoints: 100_000,
    expectedPointsPerCompletion: 10,
    isPublic: true,
  });
  const privateQuest = await createQuest(sql, {
    ...window,
    name: `Invite a friend ${tag}`,
    description: 'Private: not listed by GET /quests, but shown in its campaign.',
    totalPoints: 5_000,
    expectedPointsPerCompletion: 100,
    isPublic: false,
  });
  const accounts = [];
  for (let i = 0; i < 3; i++) accounts.push(await createAccount(sql, { pass: randomAddress() }));
  return { owner, apiKey, campaign, liveQuest, privateQuest, accounts, end };
}

type DemoData = Awaited<ReturnType<typeof createDemoData>>;

/** `demo --env`: the data as `export` lines, for `eval "$(npx quest-admin demo --env)"`. */
function envText(ctx: Context, d: DemoData): string {
  const where = ctx.config.apiBaseUrlFrom === 'API_BASE_URL' ? 'API_BASE_URL' : 'built from PORT and HOST: API_BASE_URL is unset';
  const vars = {
    BASE: ctx.config.API_BASE_URL,
    KEY: d.apiKey,
    OWNER: d.owner.id,
    CAMPAIGN: String(d.campaign.id),
    QUEST: String(d.liveQuest.id),
    PRIVATE_QUEST: String(d.privateQuest.id),
    ADDRESS: d.accounts[0]!.pass,
    ADDRESS2: d.accounts[1]!.pass,
    ADDRESS3: d.accounts[2]!.pass,
  };
  return [`# quest-admin demo: the demo data as shell variables; BASE is the API (${where})`, exportLines(vars)].join('\n');
}

/** The data created, and curl lines to try the API with it. */
function tryText(ctx: Context, d: DemoData, curl: ReturnType<typeof demoCurls>): string {
  const { owner, apiKey, campaign, liveQuest, privateQuest, accounts, end } = d;
  return [
    renderFields('Demo data created', [
      ['owner', `${owner.id} (${owner.name}, pass ${owner.pass})`],
      ['API key', apiKey],
      ['campaign', `${campaign.id} (${campaign.name})`],
      ['public quest', `${liveQuest.id} (${liveQuest.name}, ${liveQuest.totalPoints} points, until ${end.toISOString()})`],
      ['private quest', `${privateQuest.id} (${privateQuest.name}, ${privateQuest.totalPoints} points)`],
      ...accounts.map((a, i) => [`account ${i + 1}`, `${a.id} (${a.pass})`] as const),
    ]),
    '',
    ctx.config.apiBaseUrlFrom === 'API_BASE_URL'
      ? `Try it against ${ctx.config.API_BASE_URL} (API_BASE_URL):`
      : `Try it against ${ctx.config.API_BASE_URL} (API_BASE_URL is unset: built from PORT and HOST, as the API reads them; set API_BASE_URL if the API is elsewhere):`,
    '',
    '# List public quests',
    curl.listQuests,
    '',
    '# Quest details with its payouts (owner key required)',
    curl.getQuest,
    '',
    '# Campaign with its quests',
    curl.getCampaign,
    '',
    '# Credit 10 points to account 1',
    curl.allocate,
    '',
    '# Or make a new data set and keep its values as shell variables (BASE, KEY, QUEST, ADDRESS, …), which',
    '# the commands in README.md and docs/ use:',
    'eval "$(npx quest-admin demo --env)"',
  ].join('\n');
}

/**
 * A ready-to-try data set: an owner with a key, a campaign, a live public quest with a budget and
 * a private one, and three accounts. Addresses are random, so it can run any number of times.
 * With `env`, the text is only `export` lines for `eval "$(npx quest-admin demo --env)"`, so the
 * documentation's commands run as printed against this data set.
 */
export async function demo(ctx: Context, opts: { env?: boolean } = {}): Promise<CommandOutput> {
  const d = await createDemoData(await ctx.db());
  const curl = demoCurls({
    baseUrl: ctx.config.API_BASE_URL,
    apiKey: d.apiKey,
    questId: d.liveQuest.id,
    campaignId: d.campaign.id,
    address: d.accounts[0]!.pass,
    points: 10,
  });
  const quests = [d.liveQuest, d.privateQuest].map((q) => ({
    id: q.id,
    name: q.name,
    isPublic: q.isPublic,
    totalPoints: q.totalPoints,
    start: q.startAt.toISOString(),
    end: q.endAt.toISOString(),
  }));
  const json = {
    owner: { id: d.owner.id, name: d.owner.name, pass: d.owner.pass },
    apiKey: d.apiKey,
    campaign: { id: d.campaign.id, name: d.campaign.name },
    quests,
    accounts: d.accounts.map((a) => ({ id: a.id, pass: a.pass })),
    apiBaseUrl: ctx.config.API_BASE_URL,
    apiBaseUrlFrom: ctx.config.apiBaseUrlFrom,
    curl,
  };
  return { json, text: opts.env ? envText(ctx, d) : tryText(ctx, d, curl) };
}
