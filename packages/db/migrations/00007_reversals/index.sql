-- Placeholder on the events branch only: migration numbers must be consecutive, and 00007 belongs
-- to reversals (branch reversals). Take that branch's file when merging.
select 1;
