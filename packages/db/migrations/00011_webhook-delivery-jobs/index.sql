-- Webhook deliveries are handed to the queue in groups, one BullMQ job per group (docs/events.md,
-- "How delivery works"). job_id names the job that carries a delivery's current attempt (set when
-- it is handed over, cleared when the attempt is recorded or re-driven): the reconciler asks Redis
-- about that job, and a job works only the deliveries it still carries, so a stale or duplicate
-- job sends nothing even before the attempt check refuses its record.
alter table webhook_deliveries add column job_id text;
