-- The ledger matches accounts by address whatever its letter case (batches send addresses as
-- received, lower-cased, instead of paying for an EIP-55 checksum per item); answers still carry
-- the stored checksummed form. Unique, so two spellings of one address can never be two accounts.
create unique index accounts_pass_lower_key on accounts (lower(pass_address));
