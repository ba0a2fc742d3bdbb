-- 0008_cluster: what several nodes on one database need (docs/cluster.md).

-- The fencing lease of each account: every activation of the account's
-- grain increments epoch (AcquireAccountLease); the writes that assign a
-- nonce or store signed bytes lock the row FOR SHARE and compare the epoch.
CREATE TABLE account_leases (
    account_id TEXT        PRIMARY KEY,
    epoch      BIGINT      NOT NULL,
    node       TEXT        NOT NULL,
    acquired   TIMESTAMPTZ NOT NULL
);

-- The lease of each network's watcher: held by node until expires (the
-- database's clock), renewed by its holder; epoch goes up with each new
-- tenure.
CREATE TABLE network_leases (
    network TEXT        PRIMARY KEY,
    node    TEXT        NOT NULL,
    epoch   BIGINT      NOT NULL,
    expires TIMESTAMPTZ NOT NULL
);

-- Every broadcast version with its account, nonce, the node and lease epoch
-- that stored it (''/0 in single-node mode) and when it was signed (NULL for
-- versions recorded before this migration).
ALTER TABLE tx_attempts ADD COLUMN account_id TEXT   NOT NULL DEFAULT '';
ALTER TABLE tx_attempts ADD COLUMN nonce      BIGINT;
ALTER TABLE tx_attempts ADD COLUMN node       TEXT   NOT NULL DEFAULT '';
ALTER TABLE tx_attempts ADD COLUMN epoch      BIGINT NOT NULL DEFAULT 0;
ALTER TABLE tx_attempts ADD COLUMN created    TIMESTAMPTZ;
UPDATE tx_attempts a SET account_id = t.account_id, nonce = t.nonce
    FROM transactions t WHERE t.id = a.tx_id;

-- Claims of outbox rows by the dispatchers of several nodes.
ALTER TABLE callback_outbox ADD COLUMN claimed_by    TEXT;
ALTER TABLE callback_outbox ADD COLUMN claimed_until TIMESTAMPTZ;

-- Requests per user in fixed windows (span 'second' or 'hour' starting at
-- start), shared by every node's rate limiter.
CREATE TABLE rate_counters (
    user_id TEXT        NOT NULL,
    span    TEXT        NOT NULL,
    start   TIMESTAMPTZ NOT NULL,
    count   INTEGER     NOT NULL,
    PRIMARY KEY (user_id, span, start)
);
-- PruneRateCounters.
CREATE INDEX rate_counters_start ON rate_counters (start);
