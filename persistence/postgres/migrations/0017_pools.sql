-- 0017_pools: sender pools (docs/pools.md, issue 30), the PostgreSQL
-- translation of persistence/sqlite/migrations/0017.

-- A named group of one user's accounts on one network that sends as one.
-- treasury_id is the account that funds the members (NULL: none); deleted
-- is set by DeletePool (a soft delete: the pool's transactions keep their
-- pool_id, and PoolByID/ListPools no longer find it).
CREATE TABLE pools (
    seq         BIGINT      GENERATED ALWAYS AS IDENTITY UNIQUE,
    id          TEXT        PRIMARY KEY,
    owner       TEXT        NOT NULL REFERENCES users (id),
    name        TEXT        NOT NULL,
    network     TEXT        NOT NULL,
    size        INTEGER     NOT NULL,
    treasury_id TEXT        REFERENCES accounts (id),
    created     TIMESTAMPTZ NOT NULL,
    deleted     TIMESTAMPTZ
);

-- ListPools: the owner's live pools, oldest first.
CREATE INDEX pools_owner_created ON pools (owner, created, seq) WHERE deleted IS NULL;

-- The members of a pool: the account in slot (0..size-1) while removed is
-- NULL; a member that left (ResizePool down, DeletePool) keeps its row
-- with the time it left, and its account stays an ordinary account.
CREATE TABLE pool_members (
    pool_id    TEXT        NOT NULL REFERENCES pools (id),
    account_id TEXT        NOT NULL REFERENCES accounts (id),
    slot       INTEGER     NOT NULL,
    removed    TIMESTAMPTZ,
    PRIMARY KEY (pool_id, account_id)
);

-- One current member per slot, and an account in one pool at a time.
CREATE UNIQUE INDEX pool_members_slot ON pool_members (pool_id, slot) WHERE removed IS NULL;
CREATE UNIQUE INDEX pool_members_account ON pool_members (account_id) WHERE removed IS NULL;

-- A transaction sent through a pool: pool_id (NULL when sent from an
-- account; no foreign key, pools are never deleted rows), the send's
-- ordering_key (NULL when none), and what it needs of its member,
-- pool_asset ("ETH" or a token's address) and pool_value (NULL when
-- none). Nullable columns without defaults: adding them rewrites nothing.
ALTER TABLE transactions ADD COLUMN pool_id TEXT;
ALTER TABLE transactions ADD COLUMN ordering_key TEXT;
ALTER TABLE transactions ADD COLUMN pool_asset TEXT;
ALTER TABLE transactions ADD COLUMN pool_value NUMERIC(78,0);

-- PoolLoads and PendingPools: the non-ended rows of a pool, by member. The
-- status list is written as in the queries (the planner uses a partial
-- index when it can prove the query implies its condition), so the index
-- holds only the pool rows still pending, however many have ended.
CREATE INDEX transactions_pool_pending ON transactions (pool_id, account_id, status)
    WHERE pool_id IS NOT NULL AND status IN ('new', 'waiting', 'submitted');
-- OrderingKeyMember: the latest non-ended row of (pool, key).
CREATE INDEX transactions_pool_key ON transactions (pool_id, ordering_key, seq)
    WHERE ordering_key IS NOT NULL AND status IN ('new', 'waiting', 'submitted');
-- ListTransactions with TxFilter.Pool, keyset on (created, seq).
CREATE INDEX transactions_pool_created ON transactions (pool_id, created, seq) WHERE pool_id IS NOT NULL;
