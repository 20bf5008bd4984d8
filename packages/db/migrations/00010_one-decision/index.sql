-- One decision per request, whatever decides it. A request key is paid (payouts) or rejected
-- (allocation_rejections); a reversal key is applied (reversals) or refused (reversal_rejections).
-- Each table is unique on its key, but nothing stopped one attempt paying a key and another,
-- later, rejecting it: a job's first delivery skips reading stored outcomes for generated keys
-- (plan.ts itemsToLookUp), which is sound only while no other attempt of the job has decided
-- them — and an attempt whose job was taken over (its lock lapsed while it was frozen or cut off)
-- can resume after the next owner decided. These statement-level triggers refuse such a write as a
-- unique violation (23505), which the worker treats as a conflict: it retries reading every stored
-- outcome, and replays the first decision. One check per statement over the rows it inserted, only
-- for single requests (a batch's items are guarded by its progress: lifecycle.ts advanceBatch).
create function one_decision_payouts() returns trigger language plpgsql as $$
begin
  if exists (select 1 from inserted i join allocation_rejections r using (quest_id, request_key) where i.batch_id is null) then
    raise exception 'a request of this statement is already rejected' using errcode = 'unique_violation';
  end if;
  return null;
end $$;
create trigger payouts_one_decision after insert on payouts
  referencing new table as inserted for each statement execute function one_decision_payouts();

create function one_decision_rejections() returns trigger language plpgsql as $$
begin
  if exists (select 1 from inserted i join payouts p using (quest_id, request_key) where i.batch_id is null) then
    raise exception 'a request of this statement is already paid' using errcode = 'unique_violation';
  end if;
  return null;
end $$;
create trigger allocation_rejections_one_decision after insert on allocation_rejections
  referencing new table as inserted for each statement execute function one_decision_rejections();

create function one_decision_reversals() returns trigger language plpgsql as $$
begin
  if exists (select 1 from inserted i join reversal_rejections r using (id)) then
    raise exception 'a reversal of this statement is already refused' using errcode = 'unique_violation';
  end if;
  return null;
end $$;
create trigger reversals_one_decision after insert on reversals
  referencing new table as inserted for each statement execute function one_decision_reversals();

create function one_decision_reversal_rejections() returns trigger language plpgsql as $$
begin
  if exists (select 1 from inserted i join reversals r using (id)) then
    raise exception 'a reversal of this statement is already applied' using errcode = 'unique_violation';
  end if;
  return null;
end $$;
create trigger reversal_rejections_one_decision after insert on reversal_rejections
  referencing new table as inserted for each statement execute function one_decision_reversal_rejections();
