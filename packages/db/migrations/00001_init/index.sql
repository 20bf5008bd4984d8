-- Quest Rewards Service: initial schema. Postgres is the source of truth; every money-like rule
-- the service promises is also enforced here, so no code path can break it.

create table owners (
  id            text primary key check (id like 'own\_%'),
  name          text not null check (length(name) between 1 and 200),
  pass_address  text not null unique check (pass_address ~ '^0x[0-9a-fA-F]{40}$'),
  created_at    timestamptz not null default now()
);

create table api_keys (
  id          text primary key check (id like 'key\_%'),
  owner_id    text not null references owners (id) on delete cascade,
  key_hash    bytea not null unique check (octet_length(key_hash) = 32),
  prefix      text not null,
  created_at  timestamptz not null default now(),
  revoked_at  timestamptz
);
create index api_keys_owner_idx on api_keys (owner_id);

create table accounts (
  id            bigint generated always as identity primary key,
  pass_address  text not null unique check (pass_address ~ '^0x[0-9a-fA-F]{40}$'),
  balance       bigint not null default 0 check (balance >= 0 and balance <= 9007199254740991),
  created_at    timestamptz not null default now()
) with (fillfactor = 85);

create table campaigns (
  id               integer generated always as identity primary key,
  name             text not null check (length(name) between 1 and 200),
  description      text not null default '',
  start_at         timestamptz not null,
  end_at           timestamptz not null,
  is_active        boolean not null default true,
  external_app_id  text,
  created_at       timestamptz not null default now(),
  updated_at       timestamptz not null default now(),
  check (end_at > start_at)
);

create table quests (
  id                              integer generated always as identity primary key,
  campaign_id                     integer references campaigns (id),
  owner_id                        text not null references owners (id),
  name                            text not null check (length(name) between 1 and 200),
  description                     text not null default '',
  start_at                        timestamptz not null,
  end_at                          timestamptz not null,
  is_public                       boolean not null default true,
  action_status                   text not null default 'active' check (action_status in ('active', 'deactivated')),
  total_points                    bigint not null check (total_points >= 0 and total_points <= 9007199254740991),
  points_remaining                bigint not null,
  expected_points_per_completion  bigint not null default 0 check (expected_points_per_completion >= 0),
  created_at                      timestamptz not null default now(),
  updated_at                      timestamptz not null default now(),
  check (end_at > start_at),
  check (points_remaining >= 0 and points_remaining <= total_points)
) with (fillfactor = 70);
create index quests_owner_idx on quests (owner_id);
create index quests_campaign_idx on quests (campaign_id);
create index quests_public_idx on quests (id) where is_public;

-- One row per credit. seq is assigned at insert; a quest's credits are decided under its row lock,
-- so seq order is the quest's decision order (and the "newest first" order of the read API).
create table payouts (
  id           text primary key check (id like 'pay\_%'),
  seq          bigint generated always as identity,
  quest_id     integer not null references quests (id),
  account_id   bigint not null references accounts (id),
  amount       bigint not null check (amount > 0),
  request_key  text not null,
  batch_id     text,
  item_index   integer,
  created_at   timestamptz not null,
  unique (quest_id, request_key)
);
create index payouts_quest_seq_idx on payouts (quest_id, seq desc);
create index payouts_account_idx on payouts (account_id);
create index payouts_batch_idx on payouts (batch_id, item_index) where batch_id is not null;

-- Business rejections, kept so a replayed request (idempotency, redelivered job, status lookup)
-- gets its original answer. Never holds more than one outcome per request key.
create table allocation_rejections (
  quest_id     integer not null references quests (id),
  request_key  text not null,
  address      text not null,
  points       bigint not null,
  error_code   text not null,
  batch_id     text,
  item_index   integer,
  created_at   timestamptz not null,
  primary key (quest_id, request_key)
);
create index allocation_rejections_batch_idx on allocation_rejections (batch_id, item_index) where batch_id is not null;

-- Requests whose caller was answered 202 before a decision: what the status endpoint reports as
-- pending (or failed) until a payout or rejection with the same key exists.
create table allocation_requests (
  quest_id     integer not null references quests (id),
  request_key  text not null,
  address      text not null,
  points       bigint not null,
  status       text not null default 'pending' check (status in ('pending', 'failed')),
  error_code   text,
  created_at   timestamptz not null default now(),
  updated_at   timestamptz not null default now(),
  primary key (quest_id, request_key)
);

create table batches (
  id            text primary key check (id like 'bat\_%'),
  quest_id      integer not null references quests (id),
  owner_id      text not null references owners (id),
  items_digest  text not null,
  status        text not null default 'pending' check (status in ('pending', 'processing', 'completed', 'failed')),
  total         integer not null check (total > 0),
  processed     integer not null default 0 check (processed >= 0),
  succeeded     integer not null default 0 check (succeeded >= 0),
  failed        integer not null default 0 check (failed >= 0),
  error_code    text,
  created_at    timestamptz not null default now(),
  updated_at    timestamptz not null default now(),
  completed_at  timestamptz,
  check (processed <= total and succeeded + failed = processed)
);
create index batches_quest_idx on batches (quest_id, created_at desc);

create table feature_flags (
  name        text primary key check (name in ('quests', 'campaigns')),
  enabled     boolean not null,
  updated_at  timestamptz not null default now()
);
insert into feature_flags (name, enabled) values ('quests', true), ('campaigns', true);
