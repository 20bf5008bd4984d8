/** Examples of the answers (what a real quest, campaign, payout and batch look like), used by the route documents. */

export const EXAMPLE_ADDRESS = '0x52908400098527886E0F7030069857D2E4169EE7';

export const EXAMPLE_PAYOUT = {
  id: 'pay_01jf8q4g0x7m3r6v2k9d1n5bta',
  amount: 250,
  created_at: '2026-03-01T12:00:00.123Z',
  account: { pass: EXAMPLE_ADDRESS },
};

const QUEST_WINDOW = { start: '2026-03-01T00:00:00.000Z', end: '2026-04-01T00:00:00.000Z' };

export const EXAMPLE_QUEST_DETAIL = {
  id: 7,
  name: 'Spring raid',
  description: 'Clear the spring raid dungeon.',
  total_points: 100_000,
  points_remaining: 99_750,
  ...QUEST_WINDOW,
  is_active: true,
  payouts: [EXAMPLE_PAYOUT],
};

export const EXAMPLE_PUBLIC_QUESTS = [
  {
    id: 7,
    name: 'Spring raid',
    description: 'Clear the spring raid dungeon.',
    total_points: 100_000,
    expected_points_per_completion: 250,
    ...QUEST_WINDOW,
    campaign: { id: 3, name: 'Spring season', description: 'Quests of the spring season.' },
  },
  {
    id: 8,
    name: 'Daily login',
    description: 'Log in on any day of March.',
    total_points: 50_000,
    expected_points_per_completion: 10,
    ...QUEST_WINDOW,
    campaign: null,
  },
];

export const EXAMPLE_CAMPAIGN = {
  id: 3,
  created_at: '2026-02-20T09:30:00.000Z',
  updated_at: '2026-02-21T10:15:42.512Z',
  name: 'Spring season',
  description: 'Quests of the spring season.',
  ...QUEST_WINDOW,
  is_active: true,
  external_app_id: null,
  quests: [
    {
      id: 7,
      name: 'Spring raid',
      created_at: '2026-02-20T09:31:00.000Z',
      updated_at: '2026-02-20T09:31:00.000Z',
      description: 'Clear the spring raid dungeon.',
      ...QUEST_WINDOW,
      is_public: true,
      total_points: 100_000,
      expected_points_per_completion: 250,
      owner_id: 'own_01jf8q2m5c0v7k3r9x1d4n6bta',
      campaign_id: 3,
    },
  ],
};

export const EXAMPLE_ALLOCATION_ID = 'alc_01jf8q4g0x7m3r6v2k9d1n5bta';

export const EXAMPLE_BATCH = {
  id: 'bat_01jf8q4g0x7m3r6v2k9d1n5btb',
  total: 2,
  created_at: '2026-03-01T12:00:00.123Z',
};

export const EXAMPLE_REVERSAL = {
  id: 'rev_01jf8q5m2c4d6e8f0g1h3j5k7m',
  payout_id: EXAMPLE_PAYOUT.id,
  quest_id: 7,
  amount: 100,
  reason: 'bot farm',
  created_at: '2026-03-02T09:30:00.456Z',
  account: { pass: EXAMPLE_ADDRESS },
};
