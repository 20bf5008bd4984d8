-- Reversals: points taken back from a payout, decided in the quest's order like allocations (the
-- same jobs carry both). A reversal's id is its request key (`rev_` + a ULID, or `rev_k…` derived
-- from the client's Idempotency-Key), so the database refuses a second reversal for one request
-- and the id is known from the moment the request is accepted (a 202 names it).
create table reversals (
  id                text primary key check (id like 'rev\_%'),
  -- Decision order of the quest's reversals, like payouts.seq.
  seq               bigint generated always as identity,
  quest_id          integer not null references quests (id),
  payout_id         text not null references payouts (id),
  account_id        bigint not null references accounts (id),
  amount            bigint not null check (amount > 0),
  -- The points asked for; null when the request asked for the payout's unreversed remainder. A
  -- retry with the same Idempotency-Key replays only for the same body.
  requested_points  bigint check (requested_points > 0),
  reason            text check (length(reason) <= 500),
  created_at        timestamptz not null
);
-- A payout's reversals: what is left to reverse, and the payout's detail view.
create index reversals_payout_idx on reversals (payout_id, seq);

-- Business rejections of reversals (PAYOUT_ALREADY_REVERSED, REVERSAL_EXCEEDS_PAYOUT,
-- PAYOUT_NOT_FOUND), kept so a replayed request gets its original answer. payout_id has no foreign
-- key: an unknown payout is one of the rejections.
create table reversal_rejections (
  id                text primary key check (id like 'rev\_%'),
  quest_id          integer not null references quests (id),
  payout_id         text not null,
  requested_points  bigint,
  reason            text,
  error_code        text not null,
  created_at        timestamptz not null
);

-- A 202 marker is an allocation's or a reversal's: the reconciler re-drives either from it.
alter table allocation_requests
  add column kind text not null default 'allocation' check (kind in ('allocation', 'reversal')),
  add column payout_id text,
  add column reason text,
  alter column address drop not null,
  alter column points drop not null,
  add constraint allocation_requests_kind_fields_check check (
    case kind when 'allocation' then address is not null and points is not null else payout_id is not null end);

-- Every payout of an account on a quest (reversing the payouts of a list of addresses).
create index payouts_account_quest_idx on payouts (account_id, quest_id);
