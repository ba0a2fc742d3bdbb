-- 0008_cluster: what several nodes on one database need (docs/cluster.md);
-- the SQLite store is single-node, but it keeps the same schema and
-- semantics (its one writer at a time serialises what PostgreSQL locks).
-- Times are Unix milliseconds.

-- The fencing lease of each account: every activation of the account's
-- grain increments epoch (AcquireAccountLease); the writes that assign a
-- nonce or store signed bytes compare the epoch in their transaction.
CREATE TABLE account_leases (
    account_id TEXT    PRIMARY KEY,
    epoch      INTEGER NOT NULL,
    node       TEXT    NOT NULL,
    acquired   INTEGER NOT NULL
);

-- The lease of each network's watcher: held by node until expires (this
-- process's clock), renewed by its holder; epoch goes up with each new
-- tenure.
CREATE TABLE network_leases (
    network TEXT    PRIMARY KEY,
    node    TEXT    NOT NULL,
    epoch   INTEGER NOT NULL,
    expires INTEGER NOT NULL
);

-- Every broadcast version with its account, nonce, the node and lease epoch
-- that stored it (''/0 in single-node mode) and when it was signed (NULL for
-- versions recorded before this migration).
ALTER TABLE tx_attempts ADD COLUMN account_id TEXT    NOT NULL DEFAULT '';
ALTER TABLE tx_attempts ADD COLUMN nonce      INTEGER;
ALTER TABLE tx_attempts ADD COLUMN node       TEXT    NOT NULL DEFAULT '';
ALTER TABLE tx_attempts ADD COLUMN epoch      INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tx_attempts ADD COLUMN created    INTEGER;
UPDATE tx_attempts SET
    account_id = (SELECT t.account_id FROM transactions t WHERE t.id = tx_attempts.tx_id),
    nonce      = (SELECT t.nonce FROM transactions t WHERE t.id = tx_attempts.tx_id);

-- Claims of outbox rows by the dispatchers of several nodes.
ALTER TABLE callback_outbox ADD COLUMN claimed_by    TEXT;
ALTER TABLE callback_outbox ADD COLUMN claimed_until INTEGER;

-- Requests per user in fixed windows (span 'second' or 'hour' starting at
-- start), shared by the rate limiters of the processes on the file.
CREATE TABLE rate_counters (
    user_id TEXT    NOT NULL,
    span    TEXT    NOT NULL,
    start   INTEGER NOT NULL,
    count   INTEGER NOT NULL,
    PRIMARY KEY (user_id, span, start)
);
-- PruneRateCounters.
CREATE INDEX rate_counters_start ON rate_counters (start);
