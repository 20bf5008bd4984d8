-- Events and webhooks (docs/events.md).
--
-- events is a transactional outbox: the ledger inserts a quest's events in the transaction that
-- decides them, so an event exists if and only if its decision committed. `position` is null until
-- the publisher (one transaction at a time, under an advisory lock) numbers committed events in
-- order; the feed (GET /events) and the webhook fan-out read only numbered events, so a reader that
-- resumes after a position can never miss an event that committed later with a smaller id.
-- Ids are time-sortable ULIDs, so retention deletes by primary-key range.
create table events (
  id             text primary key check (id like 'evt\_%'),
  owner_id       text not null references owners (id) on delete cascade,
  type           text not null,
  quest_id       integer,
  allocation_id  text,
  batch_id       text,
  data           jsonb not null,
  created_at     timestamptz not null,
  position       bigint unique,
  published_at   timestamptz
);
create index events_unpublished_idx on events (id) where position is null;
create index events_owner_position_idx on events (owner_id, position) where position is not null;

-- The owner's threshold for quest.budget_low (null: 10 % of total_points).
alter table quests add column budget_low_threshold bigint check (budget_low_threshold >= 0);

-- An owner's webhook endpoints. The signing secret is stored encrypted (AES-256-GCM, key from
-- WEBHOOK_SECRET_KEY, the endpoint id as associated data); after a rotation the previous secret
-- keeps signing beside the new one until previous_secret_expires_at.
create table webhook_endpoints (
  id                          text primary key check (id like 'whe\_%'),
  owner_id                    text not null references owners (id) on delete cascade,
  url                         text not null,
  description                 text not null default '',
  event_types                 text[],
  secret_enc                  bytea not null,
  previous_secret_enc         bytea,
  previous_secret_expires_at  timestamptz,
  status                      text not null default 'enabled' check (status in ('enabled', 'failing')),
  failing_since               timestamptz,
  created_at                  timestamptz not null default now(),
  updated_at                  timestamptz not null default now(),
  deleted_at                  timestamptz
);
create index webhook_endpoints_owner_idx on webhook_endpoints (owner_id) where deleted_at is null;

-- One row per event per endpoint (and per replay): the delivery log and the retry schedule. The
-- schedule lives here, not in Redis: a delivery is due when pending, not handed to the queue
-- (enqueued_at null) and next_attempt_at has passed; one handed to a queue that lost it is found
-- by the reconciler (pending, enqueued long ago, no job) and handed over again.
create table webhook_deliveries (
  id                bigint generated always as identity primary key,
  endpoint_id       text not null references webhook_endpoints (id) on delete cascade,
  event_id          text not null references events (id) on delete cascade,
  status            text not null default 'pending' check (status in ('pending', 'delivered', 'failed')),
  attempts          integer not null default 0,
  next_attempt_at   timestamptz not null default now(),
  enqueued_at       timestamptz,
  created_at        timestamptz not null default now(),
  first_attempt_at  timestamptz,
  last_attempt_at   timestamptz,
  delivered_at      timestamptz,
  response_status   integer,
  response_body     text,
  latency_ms        integer,
  error             text
);
create index webhook_deliveries_due_idx on webhook_deliveries (next_attempt_at, id) where status = 'pending' and enqueued_at is null;
create index webhook_deliveries_queued_idx on webhook_deliveries (enqueued_at) where status = 'pending' and enqueued_at is not null;
create index webhook_deliveries_endpoint_idx on webhook_deliveries (endpoint_id, id desc);
create index webhook_deliveries_event_idx on webhook_deliveries (event_id);
