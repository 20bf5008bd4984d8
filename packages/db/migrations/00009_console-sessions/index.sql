-- Sessions of the browser console (/console). The browser holds only a random token in an
-- HttpOnly cookie; this table holds its SHA-256, so a copy of the table signs nobody in. An owner's
-- session names the API key it was opened with and lasts only while that key is not revoked (the
-- lookup joins api_keys), so revoking a key ends its sessions however it is revoked. An operator's
-- session holds the SHA-256 of the ADMIN_TOKEN it was opened with and ends when the token changes.
create table console_sessions (
  token_hash        bytea primary key check (octet_length(token_hash) = 32),
  api_key_id        text references api_keys (id) on delete cascade,
  admin_token_hash  bytea check (octet_length(admin_token_hash) = 32),
  -- The synchronizer token every state-changing request of the session carries.
  csrf_token        text not null check (length(csrf_token) between 32 and 100),
  created_at        timestamptz not null default now(),
  expires_at        timestamptz not null,
  check ((api_key_id is null) <> (admin_token_hash is null))
);
create index console_sessions_key_idx on console_sessions (api_key_id);
create index console_sessions_expires_idx on console_sessions (expires_at);
