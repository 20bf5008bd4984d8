-- API processes cache which key belongs to which owner and which owner has which quest. Any change
-- that could turn a cached "yes" into a "no" (a key revoked or deleted, a quest deleted or given to
-- another owner) tells them to forget, whoever makes it: the admin CLI or plain SQL.
create function notify_auth_changed() returns trigger language plpgsql as $$
begin
  perform pg_notify('quest_auth_changed', tg_table_name);
  return null;
end $$;

create trigger api_keys_auth_changed
  after update or delete on api_keys
  for each statement execute function notify_auth_changed();

create trigger quests_auth_changed
  after update of owner_id or delete on quests
  for each statement execute function notify_auth_changed();
