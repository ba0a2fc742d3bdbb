-- 0009_nonce_unique: a nonce is held by at most one transaction per
-- (account, network) (ENGINE.md, promise 2). Only rows that hold a nonce
-- count: a transaction not yet submitted, or whose nonce was released, has
-- NULL. Replacements of a transaction (the same nonce signed again) are
-- versions of one row, recorded in tx_attempts, not rows here.
--
-- Existing data that breaks the rule is not repaired silently: the
-- migration fails, naming how many keys are held twice, and an operator
-- decides which row keeps the nonce (README, Operations). The query below
-- lists them:
--   SELECT account_id, network, nonce, array_agg(id) FROM transactions
--   WHERE nonce IS NOT NULL GROUP BY 1, 2, 3 HAVING count(*) > 1;
DO $$
DECLARE
    dups bigint;
BEGIN
    SELECT count(*) INTO dups FROM (
        SELECT 1 FROM transactions WHERE nonce IS NOT NULL
        GROUP BY account_id, network, nonce HAVING count(*) > 1) d;
    IF dups > 0 THEN
        RAISE EXCEPTION 'migration 0009_nonce_unique: % (account, network, nonce) keys are held by more than one transaction; resolve them before upgrading', dups
            USING ERRCODE = 'unique_violation';
    END IF;
END $$;

-- MaxNonce (WHERE nonce IS NOT NULL) reads this index; the non-unique
-- index on the same columns is redundant with it (one write less per row).
CREATE UNIQUE INDEX transactions_account_network_nonce ON transactions (account_id, network, nonce)
    WHERE nonce IS NOT NULL;
DROP INDEX transactions_nonce;
