-- 0009_nonce_unique: a nonce is held by at most one transaction per
-- (account, network) (ENGINE.md, promise 2). Only rows that hold a nonce
-- count: a transaction not yet submitted, or whose nonce was released, has
-- NULL. Replacements of a transaction (the same nonce signed again) are
-- versions of one row, recorded in tx_attempts, not rows here.
--
-- Existing data that breaks the rule is not repaired silently: before this
-- file runs, the store counts the keys held twice and fails the migration
-- naming that count (sqlite.go, migrationCheck; SQL alone cannot raise an
-- error with a message here), and an operator decides which row keeps the
-- nonce (README, Operations).

-- MaxNonce (WHERE nonce IS NOT NULL) reads this index; the non-unique
-- index on the same columns is redundant with it (one write less per row).
CREATE UNIQUE INDEX transactions_account_network_nonce ON transactions (account_id, network, nonce)
    WHERE nonce IS NOT NULL;
DROP INDEX transactions_nonce;
