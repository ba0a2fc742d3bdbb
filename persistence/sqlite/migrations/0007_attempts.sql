-- 0007_attempts: every signed version of a transaction that was broadcast
-- (a stuck transaction is replaced with the same nonce and higher fees, and
-- either version may be mined), so the watcher finds the transaction by
-- whichever hash the chain holds. replaced is the time of the last
-- replacement.
CREATE TABLE tx_attempts (
    network TEXT NOT NULL,
    hash    TEXT NOT NULL,
    tx_id   TEXT NOT NULL REFERENCES transactions (id),
    PRIMARY KEY (network, hash)
);
CREATE INDEX tx_attempts_tx ON tx_attempts (tx_id);
INSERT INTO tx_attempts (network, hash, tx_id)
    SELECT network, hash, id FROM transactions WHERE hash IS NOT NULL;

ALTER TABLE transactions ADD COLUMN replaced INTEGER;
