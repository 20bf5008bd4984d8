-- A delivery's event is no longer a foreign key (docs/events.md, "How delivery works"). The key's
-- check ran once per delivery row written — a row lock on the event, taken in the publisher's
-- transaction — and with its twin on endpoint_id made about a quarter of the PostgreSQL CPU of a
-- delivery (tools/bench `npm run delivery-cost`). Its one use, deleting the deliveries of events
-- past retention, is done by purgeEvents in the same statement; a delivery whose event is gone all
-- the same (replayed while its event was purged) is dropped when a job reads it, not sent.
-- The endpoint key stays: deleting an owner still removes its endpoints and their deliveries.
alter table webhook_deliveries drop constraint webhook_deliveries_event_id_fkey;
