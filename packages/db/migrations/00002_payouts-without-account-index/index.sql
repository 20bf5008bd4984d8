-- Nothing reads payouts by account through an index: the audit sums them per account in one
-- sequential pass. The index was a write cost on every credit.
drop index if exists payouts_account_idx;
