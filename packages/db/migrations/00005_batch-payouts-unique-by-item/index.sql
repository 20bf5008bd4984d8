-- A payout's request identity: a single request's key, or a batch item (batch id, index). Each is
-- unique on its own partial index, so the database still refuses a second credit for one request,
-- and a batch credit maintains one unique index instead of two (the (batch_id, item_index) index
-- also serves the batch results pages).
alter table payouts drop constraint payouts_quest_id_request_key_key;
create unique index payouts_request_key_key on payouts (quest_id, request_key) where batch_id is null;
drop index payouts_batch_idx;
create unique index payouts_batch_item_key on payouts (batch_id, item_index) where batch_id is not null;
alter table payouts add constraint payouts_batch_item_check check ((batch_id is null) = (item_index is null));
