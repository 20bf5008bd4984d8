-- One lifecycle for each request and batch (see packages/db/src/lifecycle.ts).
-- A request's marker orders its writers by the enqueue they speak for: the 202 marker (pending) and
-- the worker's give-up (failed) each carry the time their item was enqueued, and the later enqueue
-- wins (on a tie, the failure of that same enqueue), whichever write lands first. job_id names the
-- job that carries the request, so the reconciler can tell a live job from a lost one.
alter table allocation_requests
  add column enqueued_at timestamptz not null default now(),
  add column job_id text,
  add column redrives integer not null default 0;
create index allocation_requests_pending_idx on allocation_requests (updated_at) where status = 'pending';

-- PostgreSQL, not Redis, holds every accepted batch's items, so a batch whose job Redis lost can be
-- enqueued again. Stored as two arrays in the batch row (one TOASTed write per batch).
alter table batches
  add column addresses text[],
  add column points bigint[],
  add column redrives integer not null default 0;
create index batches_unfinished_idx on batches (updated_at) where status in ('pending', 'processing');
